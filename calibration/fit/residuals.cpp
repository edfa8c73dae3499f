#include "calibration/fit/residuals.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>

#include "calibration/fit/fit_math.hpp"
#include "sim/core/input_error.hpp"
#include "sim/hw/gpu_model.hpp"
#include "sim/hw/grouped_gemm.hpp"
#include "sim/network/model/collective_runner.hpp"

namespace wallsim {
namespace {

std::string shape_label(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + " x" +
         std::to_string(s.batch);
}

std::string shape_label(const AttentionShape& s) {
  return "b" + std::to_string(s.batch) + " h" + std::to_string(s.heads) + "/" +
         std::to_string(s.kv_heads) + " s" + std::to_string(s.seq_q) + "/" +
         std::to_string(s.seq_kv) + " d" + std::to_string(s.head_dim) + (s.causal ? " causal" : "");
}

void predict_kernels(const GpuModel& gpu, const RawFile& raw, std::vector<PointResidual>& out) {
  const int sms = gpu.profile().sms;
  for (const GemmPoint& p : raw.gemm) {
    // A point of batch > 1 is a grouped GEMM of `batch` equal problems (the raw format's
    // meaning), predicted as the simulator times an expert layer's grouped GEMM.
    Time t;
    if (p.shape.batch > 1) {
      GemmShape problem = p.shape;
      problem.batch = 1;
      t = gpu.grouped_gemm(GroupedGemmShape{std::vector<GemmShape>(
                               static_cast<std::size_t>(p.shape.batch), problem)},
                           p.dtype, sms);
    } else {
      t = gpu.gemm(p.shape, p.dtype, sms);
    }
    out.push_back(
        {"gemm " + std::string(dtype_name(p.dtype)), shape_label(p.shape), p.time_s, t.seconds()});
  }
  for (const AttentionPoint& p : raw.attention) {
    const Time t = p.pass == AttentionPass::kForward
                       ? gpu.attention_forward(p.shape, AttentionKernel::kCudnn, sms)
                       : gpu.attention_backward(p.shape, AttentionKernel::kCudnn, sms);
    out.push_back({"attention " + std::string(attention_pass_name(p.pass)), shape_label(p.shape),
                   p.time_s, t.seconds()});
  }
  for (const MemoryPoint& p : raw.memory) {
    out.push_back({"memory " + std::string(memory_kernel_name(p.kernel)),
                   std::to_string(static_cast<long long>(p.bytes)) + " B", p.time_s,
                   gpu.memory_bound(p.bytes, sms).seconds()});
  }
}

// Topologies by node count, built once per prediction run.
class Topologies {
 public:
  explicit Topologies(ClusterSpec cluster) : cluster_(std::move(cluster)) {}
  const Topology& nodes(int count) {
    auto& slot = built_[count];
    if (!slot) slot = std::make_unique<Topology>(cluster_, count * cluster_.gpus_per_node);
    return *slot;
  }
  const ClusterSpec& cluster() const { return cluster_; }

 private:
  ClusterSpec cluster_;
  std::map<int, std::unique_ptr<Topology>> built_;
};

CollectiveRequest request_of(const CollectivePoint& p, int gpus_per_node) {
  CollectiveRequest request{p.op, {}, p.bytes, p.algorithm, p.protocol};
  const int per_node = p.ranks / p.nodes;
  if (per_node * p.nodes != p.ranks || per_node > gpus_per_node) {
    throw InputError("collective point with " + std::to_string(p.ranks) + " ranks on " +
                     std::to_string(p.nodes) + " nodes does not fit the cluster's " +
                     std::to_string(gpus_per_node) + " GPUs per node evenly");
  }
  for (int node = 0; node < p.nodes; ++node) {
    for (int i = 0; i < per_node; ++i) request.ranks.push_back(node * gpus_per_node + i);
  }
  return request;
}

void predict_collectives(const CommProfile& comm, Topologies& topologies, const RawFile& raw,
                         std::vector<PointResidual>& out) {
  for (const CollectivePoint& p : raw.collective) {
    const Topology& topology = topologies.nodes(p.nodes);
    const auto result =
        run_collective("analytical", topology, comm, request_of(p, topology.spec().gpus_per_node));
    out.push_back({std::string(op_name(p.op)) + (p.nodes > 1 ? " inter" : " intra"),
                   std::string(algorithm_name(p.algorithm)) + "/" + protocol_name(p.protocol) +
                       " n" + std::to_string(p.ranks) + " " +
                       std::to_string(static_cast<long long>(p.bytes)) + " B",
                   p.time_s, result.time.seconds()});
  }
}

}  // namespace

std::vector<PointResidual> predict_points(const Profile& profile,
                                          const std::optional<ClusterSpec>& cluster,
                                          const std::vector<RawFile>& raws) {
  const GpuModel gpu(profile.gpu);
  std::unique_ptr<Topologies> topologies;
  if (cluster) topologies = std::make_unique<Topologies>(*cluster);
  std::vector<PointResidual> out;
  for (const RawFile& raw : raws) {
    predict_kernels(gpu, raw, out);
    if (raw.collective.empty()) continue;
    if (!topologies) {
      throw InputError(raw.file, "points", "", "collective points need a cluster (--cluster)");
    }
    predict_collectives(profile.comm, *topologies, raw, out);
  }
  return out;
}

std::vector<ClassResiduals> summarize_residuals(const std::vector<PointResidual>& residuals) {
  std::vector<ClassResiduals> classes;
  std::map<std::string, std::vector<PointResidual>> by_class;
  for (const auto& r : residuals) {
    if (by_class[r.op_class].empty()) classes.push_back({r.op_class, 0, 0, 0, {}});
    by_class[r.op_class].push_back(r);
  }
  for (ClassResiduals& c : classes) {
    auto& members = by_class[c.op_class];
    std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) {
      return std::abs(a.relative_error()) > std::abs(b.relative_error());
    });
    std::vector<double> errors;
    for (const auto& r : members) errors.push_back(std::abs(r.relative_error()));
    c.points = static_cast<int>(members.size());
    c.median_abs_error = median(errors);
    c.max_abs_error = errors.front();
    c.worst.assign(members.begin(), members.begin() + std::min<std::size_t>(3, members.size()));
  }
  return classes;
}

void print_residuals(std::ostream& out, const std::vector<ClassResiduals>& classes) {
  char line[256];
  std::snprintf(line, sizeof line, "%-26s %7s %10s %10s  %s\n", "op class", "points", "median|e|",
                "max|e|", "worst points (relative error)");
  out << line;
  for (const ClassResiduals& c : classes) {
    std::snprintf(line, sizeof line, "%-26s %7d %9.2f%% %9.2f%%  ", c.op_class.c_str(), c.points,
                  100 * c.median_abs_error, 100 * c.max_abs_error);
    out << line;
    for (std::size_t i = 0; i < c.worst.size(); ++i) {
      std::snprintf(line, sizeof line, "%s%s (%+.1f%%)", i ? "; " : "", c.worst[i].label.c_str(),
                    100 * c.worst[i].relative_error());
      out << line;
    }
    out << "\n";
  }
}

}  // namespace wallsim
