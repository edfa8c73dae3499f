#include "calibration/fit/profile_fit.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "calibration/fit/comm_fit.hpp"
#include "calibration/fit/kernel_fit.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim {
namespace {

constexpr const char* kFitTool = "wallsim calibrate fit 0.1.0";

struct Points {
  std::vector<GemmPoint> gemm;
  std::vector<AttentionPoint> attention;
  std::vector<MemoryPoint> memory;
  std::vector<CollectivePoint> collective;
};

Points gather(const std::vector<RawFile>& raws) {
  Points all;
  for (const RawFile& raw : raws) {
    all.gemm.insert(all.gemm.end(), raw.gemm.begin(), raw.gemm.end());
    all.attention.insert(all.attention.end(), raw.attention.begin(), raw.attention.end());
    all.memory.insert(all.memory.end(), raw.memory.begin(), raw.memory.end());
    all.collective.insert(all.collective.end(), raw.collective.begin(), raw.collective.end());
  }
  return all;
}

nlohmann::json curve_json(const std::vector<CurvePoint>& curve, const char* x, const char* y,
                          double y_scale = 1.0) {
  nlohmann::json xs = nlohmann::json::array(), ys = nlohmann::json::array();
  for (const CurvePoint& p : curve) {
    xs.push_back(p.x);
    ys.push_back(p.y * y_scale);
  }
  return {{x, xs}, {y, ys}};
}

// Context for one fit: the document being patched and a note per fitted key.
struct Patch {
  nlohmann::json document;
  std::string note;  // "fitted by wallsim calibrate fit from <files>"
  std::vector<std::string> fitted;

  void gpu_source(const std::string& key) {
    document["gpu"]["sources"][key] = note;
    fitted.push_back("gpu." + key);
  }
};

GpuProfile parse_gpu(const Patch& patch, const std::string& where) {
  return parse_gpu_profile(JsonNode(patch.document.at("gpu"), where, "gpu"));
}

void apply_memory(const MemoryFit& fit, Patch& patch) {
  nlohmann::json& gpu = patch.document["gpu"];
  gpu["kernel_launch_overhead_us"] = fit.launch_overhead_us;
  patch.gpu_source("kernel_launch_overhead_us");
  if (fit.hbm_efficiency.empty()) return;  // no transfer long enough to see past the launch gap
  gpu["hbm_efficiency"] = curve_json(fit.hbm_efficiency, "bytes", "fraction");
  patch.gpu_source("hbm_efficiency");
}

void apply_gemm(const GemmFit& fit, const GpuProfile& gpu_profile, Patch& patch) {
  nlohmann::json& gemm = patch.document["gpu"]["gemm"];
  for (const auto& [dtype, tflops] : fit.best_tflops) {
    gemm["best_tflops"][std::string(dtype_name(dtype))] =
        std::min(tflops, gpu_profile.peak_flops(dtype) / 1e12);
    patch.gpu_source("gemm.best_tflops." + std::string(dtype_name(dtype)));
  }
  const auto gemm_table_json = [&](const std::vector<MeasuredGemm>& points) {
    nlohmann::json rows = nlohmann::json::array();
    for (const MeasuredGemm& p : points) {
      const auto integer = [](double v) { return static_cast<std::int64_t>(std::llround(v)); };
      rows.push_back({{"m", integer(p.m)},
                      {"n", integer(p.n)},
                      {"k", integer(p.k)},
                      {"tflops", p.flops_per_s / 1e12}});
    }
    return nlohmann::json{{"source", patch.note}, {"points", rows}};
  };
  for (const auto& [dtype, points] : fit.measured) {
    const std::string name(dtype_name(dtype));
    // No compute-bound dense shape of this dtype (grouped or memory-bound points alone): the
    // base's dense table stays.
    if (!points.empty()) gemm["measured"][name] = gemm_table_json(points);
    // A base's grouped table was measured beside its dense one, not beside these points: the
    // fitted profile takes the grouped points measured with them, or else folds grouped GEMMs
    // into its own dense table.
    const auto grouped = fit.grouped_measured.find(dtype);
    if (grouped != fit.grouped_measured.end()) {
      gemm["grouped_measured"][name] = gemm_table_json(grouped->second);
    } else if (gemm.contains("grouped_measured")) {
      gemm["grouped_measured"].erase(name);
      if (gemm["grouped_measured"].empty()) gemm.erase("grouped_measured");
    }
  }
  // The fitted tables replace the base's; the falloff stays only for a dtype still without one.
  const bool every_dtype_tabled =
      std::all_of(gpu_profile.compute.begin(), gpu_profile.compute.end(), [&](const auto& c) {
        return gemm.contains("measured") &&
               gemm["measured"].contains(std::string(dtype_name(c.first)));
      });
  if (every_dtype_tabled) {
    gemm.erase("size_falloff");
    patch.document["gpu"]["sources"].erase("gemm.size_falloff");
    return;
  }
  gemm["size_falloff"] = curve_json(fit.size_falloff, "flops", "relative");
  patch.gpu_source("gemm.size_falloff");
}

nlohmann::json table_json(const AttentionTable& table) {
  nlohmann::json out = curve_json(table.achieved_flops_by_seq.points(), "seq_len", "tflops", 1e-12);
  out["pass"] = attention_pass_name(table.pass);
  out["causal"] = table.causal;
  out["head_dim"] = static_cast<int>(table.head_dim);
  return out;
}

// attn_bench times cuDNN's fused attention, so the fit patches the profile's cudnn tables:
// measured (pass, causal) pairs replace all of the base's cudnn tables of that pair; pairs the
// data lack keep the base's tables (none when the base had no cudnn tables).
void apply_attention(const std::vector<AttentionTable>& fitted, Patch& patch) {
  nlohmann::json& cudnn = patch.document["gpu"]["attention"]["backends"]["cudnn"];
  std::set<std::pair<std::string, bool>> measured;
  for (const auto& t : fitted)
    measured.insert({std::string(attention_pass_name(t.pass)), t.causal});
  nlohmann::json tables = nlohmann::json::array();
  if (cudnn.contains("tables")) {
    for (const auto& t : cudnn["tables"]) {
      if (!measured.count({t["pass"].get<std::string>(), t["causal"].get<bool>()}))
        tables.push_back(t);
    }
  }
  for (const auto& t : fitted) tables.push_back(table_json(t));
  cudnn["tables"] = tables;
  cudnn["kernel"] = "cuDNN fused attention (wallsim attn_bench)";
  patch.gpu_source("attention.backends.cudnn");
}

nlohmann::json per_protocol(const PerProtocol& v) {
  return {v[0], v[1], v[2]};
}

void write_comm(const CommProfile& c, nlohmann::json& comm) {
  comm["nvlink_efficiency"] = c.nvlink_efficiency;
  comm["network_efficiency"] = c.network_efficiency;
  comm["nvls_efficiency"] = c.nvls_efficiency;
  const char* names[] = {"ll", "ll128", "simple"};
  for (int p = 0; p < kProtocolCount; ++p) {
    comm["protocol_efficiency"]["ring"][names[p]] = c.ring_protocol_efficiency[p];
  }
  comm["max_bus_GBps"]["ring_ll"] = c.ring_ll_max_bus_GBps;
  comm["max_bus_GBps"]["tree_ll"] = c.tree_ll_max_bus_GBps;
  comm["max_bus_GBps"]["tree_ll128"] = c.tree_ll128_max_bus_GBps;
  comm["max_bus_GBps"]["tree_simple"] = c.tree_simple_max_bus_GBps;
  const std::pair<const char*, const AlgorithmLatency*> latencies[] = {
      {"ring", &c.ring}, {"tree", &c.tree}, {"nvls", &c.nvls}, {"p2p", &c.p2p}};
  for (const auto& [name, latency] : latencies) {
    comm["latency_us"][name] = {{"base", per_protocol(latency->base_us)},
                                {"nvlink", per_protocol(latency->nvlink_us)},
                                {"net", per_protocol(latency->net_us)}};
  }
}

void fit_kernels(const Points& points, const std::string& where, Patch& patch) {
  GpuProfile gpu = parse_gpu(patch, where);
  if (auto memory = fit_memory(points.memory, gpu.hbm_bandwidth_Bps)) {
    apply_memory(*memory, patch);
    gpu = parse_gpu(patch, where);
  }
  for (const GemmPoint& p : points.gemm) gpu.peak_flops(p.dtype);  // InputError if unknown
  if (auto gemm = fit_gemm(points.gemm, gpu)) apply_gemm(*gemm, gpu, patch);
  if (!points.attention.empty()) {
    apply_attention(fit_attention(points.attention, gpu.kernel_launch_overhead.us()), patch);
  }
}

void fit_collectives(const Points& points, const CommProfile& base, const ClusterSpec& cluster,
                     Patch& patch) {
  const auto series = fit_collective_series(points.collective, base.ring_channels);
  const CommFit fit = fit_comm(series, base, cluster);
  nlohmann::json& comm = patch.document["comm"];
  write_comm(fit.profile, comm);
  for (const std::string& key : fit.fitted) {
    comm["sources"]["fit: " + key] = patch.note + " (line rates of cluster " + cluster.name + ")";
    patch.fitted.push_back("comm." + key);
  }
}

std::string describe_raws(const std::vector<RawFile>& raws) {
  std::set<std::string> tools;
  std::string files;
  for (const RawFile& raw : raws) {
    tools.insert(raw.tool);
    files += (files.empty() ? "" : ", ") + raw.file;
  }
  std::string tool_list;
  for (const auto& tool : tools) tool_list += (tool_list.empty() ? "" : ", ") + tool;
  return files + " (written by " + tool_list + ")";
}

void write_provenance(const std::vector<RawFile>& raws, const std::string& base_where,
                      Patch& patch) {
  std::string date, hardware;
  for (const RawFile& raw : raws) {
    date = std::max(date, raw.date);
    const std::string gpu = raw.hardware.at("gpu");
    if (hardware.find(gpu) == std::string::npos) hardware += (hardware.empty() ? "" : "; ") + gpu;
  }
  patch.document["provenance"] = {
      {"source", patch.note + "; every other value as in " + base_where},
      {"date", date},
      {"hardware", hardware},
      {"tool", kFitTool}};
}

}  // namespace

ProfileFit fit_profile(const nlohmann::json& base_document, const std::string& base_where,
                       const std::vector<RawFile>& raws,
                       const std::optional<ClusterSpec>& cluster) {
  if (raws.empty()) throw InputError("command line", "", "", "no raw files to fit");
  const Profile base = parse_profile(base_document, base_where);
  Patch patch{
      base_document, "fitted by " + std::string(kFitTool) + " from " + describe_raws(raws), {}};
  const Points points = gather(raws);
  fit_kernels(points, base_where, patch);
  if (!points.collective.empty()) {
    if (!cluster) {
      throw InputError("command line", "--cluster", "",
                       "collective points need a cluster file for the line rates");
    }
    fit_collectives(points, base.comm, *cluster, patch);
  }
  write_provenance(raws, base_where, patch);
  ProfileFit out{patch.document, {}, patch.fitted};
  out.profile = parse_profile(out.document, "the fitted profile");
  return out;
}

}  // namespace wallsim
