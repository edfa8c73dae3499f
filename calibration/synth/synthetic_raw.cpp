#include "calibration/synth/synthetic_raw.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "sim/hw/gpu_model.hpp"
#include "sim/network/model/collective_runner.hpp"

namespace wallsim {

SeededNoise::SeededNoise(std::uint64_t seed) : engine_(seed) {}

double SeededNoise::uniform_open() {
  // 53 random bits, shifted off zero by half a step.
  return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53;
}

double SeededNoise::standard_normal() {
  const double u1 = uniform_open(), u2 = uniform_open();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double SeededNoise::perturb(double time_s, double relative_sigma) {
  return time_s * (1.0 + relative_sigma * std::clamp(standard_normal(), -3.0, 3.0));
}

namespace {

RawFile make_file(RawKind kind, const std::string& tool_library, const Profile& profile,
                  const SyntheticOptions& options) {
  RawFile raw;
  raw.tool = kSyntheticTool;
  raw.version = "0.1.0";
  raw.date = options.date;
  raw.kind = kind;
  raw.hardware = {{"gpu", profile.gpu.name + " (modelled by profile " + profile.name + ")"},
                  {"driver", "none: synthetic"},
                  {"cuda", "none: synthetic"},
                  {tool_library, "none: synthetic"}};
  return raw;
}

// A generic grid plus the GEMMs of a Llama-3-8B layer (8192 tokens, TP 1 and 2: forward,
// data-gradient and weight-gradient shapes) plus grouped expert GEMMs.
std::vector<GemmShape> gemm_shapes() {
  std::vector<GemmShape> shapes;
  const std::int64_t sizes[] = {256, 512, 1024, 2048, 4096, 8192, 16384};
  for (auto m : sizes) {
    for (auto n : sizes) {
      for (std::int64_t k : {1024, 4096, 8192}) shapes.push_back({m, n, k});
    }
  }
  for (std::int64_t tp : {1, 2}) {
    for (auto [n, k] : {std::pair<std::int64_t, std::int64_t>{6144 / tp, 4096},
                        {4096, 4096 / tp},
                        {28672 / tp, 4096},
                        {4096, 14336 / tp}}) {
      shapes.push_back({8192, n, k});  // forward
      shapes.push_back({8192, k, n});  // data gradient
      shapes.push_back({k, n, 8192});  // weight gradient
    }
  }
  for (std::int64_t experts : {8, 64}) {
    for (std::int64_t tokens : {128, 512, 2048}) {
      shapes.push_back({tokens, 2 * 1536, 4096, experts});
      shapes.push_back({tokens, 4096, 1536, experts});
    }
  }
  return shapes;
}

RawFile synth_gemm(const GpuModel& gpu, const Profile& profile, const SyntheticOptions& options,
                   SeededNoise& noise) {
  RawFile raw = make_file(RawKind::kGemm, "cublas", profile, options);
  for (Dtype dtype : {Dtype::kBf16, Dtype::kFp8}) {
    if (!gpu.profile().supports(dtype)) continue;
    for (const GemmShape& shape : gemm_shapes()) {
      const double t = gpu.gemm(shape, dtype, gpu.profile().sms).seconds();
      raw.gemm.push_back({shape, dtype, noise.perturb(t, options.relative_noise)});
    }
  }
  return raw;
}

// 16k tokens per call (batch · seq), 2048-wide attention (heads · head_dim), GQA 4:1, as the
// FlashAttention benchmarks run; two batch splits per sequence length.
RawFile synth_attention(const GpuModel& gpu, const Profile& profile,
                        const SyntheticOptions& options, SeededNoise& noise) {
  RawFile raw = make_file(RawKind::kAttention, "cudnn", profile, options);
  const int sms = gpu.profile().sms;
  for (AttentionPass pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    for (bool causal : {false, true}) {
      for (std::int64_t head_dim : {64, 128}) {
        for (std::int64_t seq : {512, 1024, 2048, 4096, 8192, 16384}) {
          for (std::int64_t split : {1, 2}) {
            const std::int64_t heads = 2048 / head_dim / split;
            const AttentionShape shape{
                16384 / seq * split, heads, heads / 4, seq, seq, head_dim, causal};
            const Time t = pass == AttentionPass::kForward
                               ? gpu.attention_forward(shape, AttentionKernel::kCudnn, sms)
                               : gpu.attention_backward(shape, AttentionKernel::kCudnn, sms);
            raw.attention.push_back(
                {shape, pass, noise.perturb(t.seconds(), options.relative_noise)});
          }
        }
      }
    }
  }
  return raw;
}

RawFile synth_memory(const GpuModel& gpu, const Profile& profile, const SyntheticOptions& options,
                     SeededNoise& noise) {
  RawFile raw = make_file(RawKind::kMemory, "cuda_runtime", profile, options);
  const int sms = gpu.profile().sms;
  for (int repeat = 0; repeat < 8; ++repeat) {
    const double t = gpu.memory_bound(0, sms).seconds();
    raw.memory.push_back({MemoryKernel::kEmpty, 0, noise.perturb(t, options.relative_noise)});
  }
  for (MemoryKernel kernel : {MemoryKernel::kCopy, MemoryKernel::kElementwise}) {
    for (int log2_bytes = 12; log2_bytes <= 32; ++log2_bytes) {
      for (int repeat = 0; repeat < 3; ++repeat) {
        const double bytes = std::exp2(log2_bytes);
        const double t = gpu.memory_bound(bytes, sms).seconds();
        raw.memory.push_back({kernel, bytes, noise.perturb(t, options.relative_noise)});
      }
    }
  }
  return raw;
}

struct SeriesSpec {
  CollectiveOp op;
  Algorithm algorithm;
  Protocol protocol;
  int ranks_per_node;
  int nodes;
};

std::vector<SeriesSpec> collective_series(const ClusterSpec& cluster, int max_nodes) {
  using enum CollectiveOp;
  std::vector<SeriesSpec> out;
  const Protocol protocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};
  for (int ranks = 2; ranks <= cluster.gpus_per_node; ranks *= 2) {
    for (CollectiveOp op : {kAllReduce, kAllGather, kReduceScatter}) {
      for (Protocol p : protocols) out.push_back({op, Algorithm::kRing, p, ranks, 1});
    }
    if (cluster.nvlink.nvls && ranks > 2) {
      out.push_back({kAllReduce, Algorithm::kNvls, Protocol::kSimple, ranks, 1});
    }
    out.push_back({kSendRecv, Algorithm::kP2p, Protocol::kSimple, ranks, 1});
  }
  out.push_back({kAllToAll, Algorithm::kPairwise, Protocol::kSimple, cluster.gpus_per_node, 1});
  for (int nodes = 2; nodes <= max_nodes; nodes *= 2) {
    const int ppn = cluster.gpus_per_node;
    for (Protocol p : protocols) {
      out.push_back({kAllReduce, Algorithm::kRing, p, ppn, nodes});
      out.push_back({kAllReduce, Algorithm::kTree, p, ppn, nodes});
    }
    out.push_back({kAllGather, Algorithm::kRing, Protocol::kSimple, ppn, nodes});
    out.push_back({kReduceScatter, Algorithm::kRing, Protocol::kSimple, ppn, nodes});
    out.push_back({kAllToAll, Algorithm::kPairwise, Protocol::kSimple, ppn, nodes});
  }
  return out;
}

RawFile synth_collective(const Profile& profile, const ClusterSpec& cluster,
                         const SyntheticOptions& options, SeededNoise& noise) {
  RawFile raw = make_file(RawKind::kCollective, "nccl", profile, options);
  for (const SeriesSpec& s : collective_series(cluster, options.max_nodes)) {
    const Topology topology(cluster, s.nodes * cluster.gpus_per_node);
    CollectiveRequest request{s.op, {}, 0, s.algorithm, s.protocol};
    for (int node = 0; node < s.nodes; ++node) {
      for (int i = 0; i < s.ranks_per_node; ++i)
        request.ranks.push_back(node * cluster.gpus_per_node + i);
    }
    for (int log2_bytes = 10; log2_bytes <= 30; log2_bytes += 2) {
      request.bytes = std::exp2(log2_bytes);
      const auto result = run_collective("analytical", topology, profile.comm, request);
      raw.collective.push_back({s.op, result.ranks, s.nodes, request.bytes, s.algorithm, s.protocol,
                                noise.perturb(result.time.seconds(), options.relative_noise)});
    }
  }
  return raw;
}

}  // namespace

std::vector<RawFile> synthesize_raw_files(const Profile& profile, const ClusterSpec& cluster,
                                          const SyntheticOptions& options) {
  const GpuModel gpu(profile.gpu);
  SeededNoise noise(options.seed);
  std::vector<RawFile> files;
  files.push_back(synth_gemm(gpu, profile, options, noise));
  files.push_back(synth_attention(gpu, profile, options, noise));
  files.push_back(synth_memory(gpu, profile, options, noise));
  files.push_back(synth_collective(profile, cluster, options, noise));
  return files;
}

}  // namespace wallsim
