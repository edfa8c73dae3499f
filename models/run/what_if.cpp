#include "models/run/what_if.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "models/memory.hpp"
#include "models/run/simulate.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/parallel_for.hpp"
#include "sim/hw/dtype.hpp"

namespace wallsim::models {
namespace {

// Scales the best GEMM throughput of every dtype, capped at its dense peak; returns the factor
// the training precision actually got.
double scale_gemm(GpuProfile& gpu, double factor, Dtype training) {
  double applied = factor;
  for (auto& [dtype, compute] : gpu.compute) {
    const double scaled = std::min(compute.peak_flops, compute.gemm_best_flops * factor);
    if (dtype == training) applied = scaled / compute.gemm_best_flops;
    compute.gemm_best_flops = scaled;
  }
  return applied;
}

// A number as an override value that reads back as the same double.
std::string exact(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

struct Candidate {
  std::string change;
  std::vector<std::string> overrides;
};

// Megatron-Core's fine-grained recompute modules that apply to the model and are not yet
// recomputed, in the order of the MCore MoE report's Table 4.
std::vector<std::string> fine_grained_modules(const RunConfig& config) {
  const TrainingSpec& training = config.training;
  std::vector<std::string> added;
  if (training.recompute == Recompute::full || !(config.model.moe || config.model.mla)) {
    return added;
  }
  for (const char* module : {"mla_up_proj", "moe_act", "layernorm"}) {
    if (std::string(module) == "mla_up_proj" && !config.model.mla) continue;
    if (std::string(module) == "moe_act" && !config.model.moe) continue;
    if (!training.recomputes(module)) added.push_back(module);
  }
  return added;
}

std::vector<Candidate> candidates(const RunConfig& config, int compute_capability) {
  const TrainingSpec& training = config.training;
  const ParallelSizes& sizes = config.layout.sizes;
  std::vector<Candidate> list;
  if (training.recompute == Recompute::none) {
    list.push_back({"recompute=selective", {"training.recompute=selective"}});
  }
  if (training.recompute != Recompute::full) {
    list.push_back({"recompute=full", {"training.recompute=full"}});
  }
  if (!training.distributed_optimizer) {
    list.push_back({"distributed_optimizer=true", {"training.distributed_optimizer=true"}});
  }
  if (training.micro_batch > 1) {
    const std::string half = std::to_string(training.micro_batch / 2);
    list.push_back({"micro_batch=" + half, {"training.micro_batch=" + half}});
  }
  // A config that states dp must state the halved one too.
  const auto with_dp = [&](std::vector<std::string> overrides) {
    if (config.parallel.dp) overrides.push_back("parallel.dp=" + std::to_string(sizes.dp / 2));
    return overrides;
  };
  const std::string pp = std::to_string(sizes.pp * 2);
  list.push_back({"pp=" + pp, with_dp({"parallel.pp=" + pp})});
  if (sizes.tp * 2 <= config.cluster.gpus_per_domain()) {
    const std::string tp = std::to_string(sizes.tp * 2);
    list.push_back({"tp=" + tp, with_dp({"parallel.tp=" + tp})});
  }
  if (training.recompute != Recompute::full && !training.distributed_optimizer) {
    list.push_back({"recompute=full + distributed_optimizer=true",
                    {"training.recompute=full", "training.distributed_optimizer=true"}});
  }
  // Sharding the gradients (ZeRO-2) or the parameters too (ZeRO-3) over DP×CP.
  if (sizes.dp * sizes.cp > 1) {
    for (const DataSharding sharding : {DataSharding::kGrads, DataSharding::kParams}) {
      if (config.layout.data_sharding >= sharding) continue;
      list.push_back({std::string("data_sharding=") + to_string(sharding),
                      {std::string("parallel.data_sharding=") + to_string(sharding),
                       "training.distributed_optimizer=true"}});
    }
  }
  if (training.grad_reduce_dtype != Dtype::kBf16) {
    list.push_back({"grad_reduce_dtype=bf16", {"training.grad_reduce_dtype=bf16"}});
  }
  // Per-layer CUDA graphs' static inputs and private pool (models/memory.cpp): eager instead.
  if (training.cuda_graphs == CudaGraphs::kPerLayer) {
    list.push_back({"cuda_graphs=none", {"training.cuda_graphs=none"}});
  }
  // Megatron's precision-aware optimizer with bf16 moments (it needs the distributed optimizer).
  if (training.distributed_optimizer && !training.optimizer.precision_aware) {
    list.push_back(
        {"precision-aware optimizer, bf16 moments",
         {"training.optimizer.precision_aware=true", "training.optimizer.exp_avg_dtype=bf16",
          "training.optimizer.exp_avg_sq_dtype=bf16"}});
  }
  if (!training.offload_activations) {
    list.push_back({"offload.activations=true", {"training.offload.activations=true"}});
  }
  // Megatron's chunked optimizer-state offload: the state on the host between steps, staged back
  // for the GPU's step in 256 MiB chunks.
  if (training.distributed_optimizer && training.offload_optimizer_states == 0 &&
      training.offload_optimizer_fraction == 0 &&
      config.layout.data_sharding == DataSharding::kOptimizer &&
      training.cuda_graphs != CudaGraphs::kFullIteration) {
    list.push_back(
        {"offload.optimizer_states=1",
         {"training.offload.optimizer_states=1", "training.offload.optimizer_state_chunk_mb=256"}});
  }
  // Megatron's hybrid CPU optimizer, all of it on the CPU: on clusters whose host bandwidth is
  // known, with the precision-aware optimizer it needs.
  if (training.distributed_optimizer && training.offload_optimizer_fraction == 0 &&
      config.cluster.host_memory_GBps && config.layout.data_sharding == DataSharding::kOptimizer) {
    std::vector<std::string> overrides{"training.offload.optimizer_fraction=1"};
    if (!training.optimizer.precision_aware) {
      overrides.push_back("training.optimizer.precision_aware=true");
    }
    list.push_back({"offload.optimizer_fraction=1", std::move(overrides)});
  }
  if (const auto added = fine_grained_modules(config); !added.empty()) {
    std::vector<std::string> modules;
    if (training.recompute == Recompute::selective) modules = training.recompute_modules;
    modules.insert(modules.end(), added.begin(), added.end());
    std::string change = "recompute";
    std::string value = "[";
    for (std::size_t i = 0; i < added.size(); ++i) change += (i ? " + " : " ") + added[i];
    for (std::size_t i = 0; i < modules.size(); ++i) {
      value += (i ? ",\"" : "\"") + modules[i] + "\"";
    }
    list.push_back(
        {change, {"training.recompute=selective", "training.recompute_modules=" + value + "]"}});
  }
  if (training.precision == Dtype::kBf16 && compute_capability >= 89) {
    list.push_back({"precision=fp8", {"training.precision=fp8"}});
  }
  return list;
}

}  // namespace

Sensitivity sensitivity(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                        const std::string& parameter, double factor, double baseline_step_s) {
  std::vector<std::string> overrides;
  GpuProfile scaled_gpu = gpu;
  double applied = factor;
  if (parameter == "nvlink_bandwidth") {
    overrides.push_back("cluster.node.nvlink.bandwidth_GBps=" +
                        exact(config.cluster.nvlink.bandwidth_GBps * factor));
  } else if (parameter == "ib_bandwidth") {
    overrides.push_back("cluster.node.nic.bandwidth_Gbps=" +
                        exact(config.cluster.nic.bandwidth_Gbps * factor));
  } else if (parameter == "gemm_efficiency") {
    applied = scale_gemm(scaled_gpu, factor, config.training.precision);
  } else if (parameter == "hbm_bandwidth") {
    scaled_gpu.hbm_bandwidth_Bps *= factor;
  } else if (parameter == "host_issue_cost") {
    scaled_gpu.host.kernel_issue =
        Time::from_seconds(scaled_gpu.host.kernel_issue.seconds() * factor);
    scaled_gpu.host.graph_issue =
        Time::from_seconds(scaled_gpu.host.graph_issue.seconds() * factor);
  } else {
    throw InputError("sensitivity", "parameter", parameter,
                     "must be one of: nvlink_bandwidth, ib_bandwidth, gemm_efficiency, "
                     "hbm_bandwidth, host_issue_cost");
  }
  const RunConfig scaled_config = overrides.empty() ? config : variant_of(config, overrides);
  const double step = simulate(scaled_config, scaled_gpu, comm).summary.iteration_time_s;
  return Sensitivity{parameter, applied, step, baseline_step_s > 0 ? step / baseline_step_s - 1 : 0,
                     ""};
}

std::optional<Sensitivity> cuda_graphs_what_if(const RunConfig& config, const GpuProfile& gpu,
                                               const CommProfile& comm, double baseline_step_s) {
  const CudaGraphs next = config.training.cuda_graphs == CudaGraphs::kNone
                              ? CudaGraphs::kPerLayer
                              : CudaGraphs::kFullIteration;
  if (config.training.cuda_graphs == CudaGraphs::kFullIteration) return std::nullopt;
  RunConfig changed;
  try {
    changed = variant_of(config, {std::string("training.cuda_graphs=") + to_string(next)});
  } catch (const InputError&) {
    return std::nullopt;  // e.g. a whole-iteration graph with dropless MoE routing
  }
  const double step = simulate(changed, gpu, comm).summary.iteration_time_s;
  return Sensitivity{"cuda_graphs", 1, step, baseline_step_s > 0 ? step / baseline_step_s - 1 : 0,
                     to_string(next)};
}

std::vector<Sensitivity> sensitivities(const RunConfig& config, const GpuProfile& gpu,
                                       const CommProfile& comm, double baseline_step_s, int jobs) {
  struct WhatIf {
    const char* parameter;  // nullptr: the next CUDA-graph scope
    double factor;
  };
  std::vector<WhatIf> what_ifs;
  for (const char* parameter :
       {"nvlink_bandwidth", "ib_bandwidth", "gemm_efficiency", "hbm_bandwidth"}) {
    for (double factor : {1.1, 0.9}) what_ifs.push_back({parameter, factor});
  }
  what_ifs.push_back({"host_issue_cost", 0.5});
  what_ifs.push_back({nullptr, 1});
  std::vector<std::optional<Sensitivity>> answers(what_ifs.size());
  parallel_for(static_cast<std::int64_t>(what_ifs.size()), jobs, [&](std::int64_t i) {
    const WhatIf& w = what_ifs[static_cast<std::size_t>(i)];
    answers[static_cast<std::size_t>(i)] =
        w.parameter ? sensitivity(config, gpu, comm, w.parameter, w.factor, baseline_step_s)
                    : cuda_graphs_what_if(config, gpu, comm, baseline_step_s);
  });
  std::vector<Sensitivity> all;
  for (auto& answer : answers) {
    if (answer) all.push_back(std::move(*answer));
  }
  return all;
}

std::vector<FitCandidate> fit_suggestions(const RunConfig& config, double hbm_bytes,
                                          int compute_capability) {
  std::vector<FitCandidate> result;
  for (const Candidate& candidate : candidates(config, compute_capability)) {
    FitCandidate fit;
    fit.change = candidate.change;
    fit.overrides = candidate.overrides;
    try {
      const RunConfig changed = variant_of(config, candidate.overrides);
      const MemoryReport memory = memory_report(changed.model, changed.layout, changed.training,
                                                hbm_bytes, compute_capability);
      fit.peak_bytes = memory.peak_bytes;
      fit.fits = memory.fits_in_memory;
    } catch (const InputError& error) {
      fit.valid = false;
      fit.note = error.what();
    }
    result.push_back(fit);
  }
  return result;
}

void time_fit_suggestions(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                          double baseline_step_s, std::vector<FitCandidate>& candidates, int jobs) {
  std::vector<FitCandidate*> to_time;
  for (FitCandidate& fit : candidates) {
    if (fit.valid && fit.fits) to_time.push_back(&fit);
  }
  parallel_for(static_cast<std::int64_t>(to_time.size()), jobs, [&](std::int64_t i) {
    FitCandidate& fit = *to_time[static_cast<std::size_t>(i)];
    try {
      const RunConfig changed = variant_of(config, fit.overrides);
      fit.step_s = simulate(changed, gpu, comm).summary.iteration_time_s;
      fit.step_change = baseline_step_s > 0 ? fit.step_s / baseline_step_s - 1 : 0;
      fit.timed = true;
    } catch (const std::exception& error) {
      fit.note = error.what();
    }
  });
}

}  // namespace wallsim::models
