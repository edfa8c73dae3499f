#include "models/run/summarize.hpp"

#include <algorithm>

#include "models/flops.hpp"
#include "models/memory.hpp"
#include "models/step/attention_backend_choice.hpp"
#include "sim/hw/dtype.hpp"
#include "sim/report/kernel_families.hpp"
#include "sim/report/op_category.hpp"
#include "sim/report/time_attribution.hpp"
#include "sim/report/walls.hpp"

namespace wallsim::models {
namespace {

Time rank_end(const RankTrace& trace) {
  Time end = Time::zero();
  for (const auto& record : trace.ops) end = max(end, record.end);
  return end;
}

Time compute_busy(const OpGraph& graph, const RankTrace& trace) {
  Time busy = Time::zero();
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.shared_op(i);
    if (op.stream == Streams::kCompute && op.kind == OpKind::kCompute) {
      busy = busy + (trace.ops[i].end - trace.ops[i].start);
    }
  }
  return busy;
}

// The rank that finishes last; among ranks finishing together (a step ends with collectives
// every rank waits for), the one that computed the longest, so the time split shows the work
// that set the pace rather than a rank waiting for it.
RankIndex critical_rank(const StepProgram& program, const ReplayResult& replay) {
  RankIndex critical = 0;
  Time latest = Time::zero(), busiest = Time::zero();
  for (RankIndex r = 0; r < static_cast<RankIndex>(replay.ranks.size()); ++r) {
    const Time end = rank_end(replay.ranks[r]);
    if (end < latest) continue;
    const Time busy = compute_busy(program.graphs[r], replay.ranks[r]);
    if (end > latest || busy > busiest) {
      latest = end;
      busiest = busy;
      critical = r;
    }
  }
  return critical;
}

// Time beyond the ideal per compute kind: GEMM and attention time minus their FLOPs at peak;
// elementwise and optimizer time in full (their ideal is zero model FLOPs).
ComputeExcess compute_excess(const OpGraph& graph, const RankTrace& trace, double peak) {
  const auto seconds = compute_time_by_category(graph, trace, Streams::kCompute);
  std::array<double, kOpCategoryCount> flops{};
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.shared_op(i);
    if (op.stream == Streams::kCompute) flops[op.category] += op.flops;
  }
  ComputeExcess excess;
  for (const OpCategoryInfo& info : kOpCategories) {
    if (info.communication) continue;
    const auto c = static_cast<std::size_t>(info.category);
    excess.seconds[static_cast<std::size_t>(info.slot)] = seconds[c] - flops[c] / peak;
  }
  return excess;
}

// GEMMs run in the training precision, fused attention in bf16 (sim/hw/gpu_model.hpp);
// memory-bound kinds are measured against the HBM bandwidth only.
KernelRates kernel_rates(const GpuProfile& gpu, Dtype precision) {
  KernelRates rates;
  rates.peak_flops[category_slot(OpCategory::kGemm)] = gpu.peak_flops(precision);
  rates.peak_flops[category_slot(OpCategory::kAttention)] = gpu.peak_flops(Dtype::kBf16);
  rates.hbm_bandwidth_Bps = gpu.hbm_bandwidth_Bps;
  return rates;
}

std::vector<StageMemorySummary> stage_memory(const MemoryReport& report, const StepProgram& program,
                                             const ReplayResult& replay) {
  std::vector<StageMemorySummary> stages;
  for (const auto& stage : report.stages) {
    StageMemorySummary summary{static_cast<int>(stage.stage),
                               stage.weights,
                               stage.grads,
                               stage.optimizer,
                               stage.activations,
                               stage.buffers,
                               stage.peak};
    summary.unit_buffers = stage.unit_buffers;
    summary.wgrad_placeholders = stage.wgrad_placeholders;
    summary.grad_transients = stage.grad_transients;
    summary.host_optimizer = stage.host_optimizer;
    summary.cuda_graphs = stage.cuda_graphs;
    summary.allocated = stage.allocated;
    summary.reserved = stage.reserved;
    for (std::size_t r = 0; r < program.graphs.size(); ++r) {
      if (program.stage[r] != stage.stage) continue;
      summary.simulated_peak = std::max(summary.simulated_peak, replay.ranks[r].peak_bytes);
      summary.simulated_activations =
          std::max(summary.simulated_activations,
                   replay.ranks[r].peak_bytes - program.graphs[r].static_bytes);
    }
    stages.push_back(summary);
  }
  return stages;
}

}  // namespace

std::string describe_layout(const RunConfig& config) {
  const Layout& layout = config.layout;
  std::string text = "tp" + std::to_string(layout.sizes.tp);
  if (layout.sequence_parallel) text += " sp";
  text += " cp" + std::to_string(layout.sizes.cp) + " pp" + std::to_string(layout.sizes.pp);
  if (layout.vpp > 1) text += " vpp" + std::to_string(layout.vpp);
  text += " dp" + std::to_string(layout.sizes.dp);
  if (config.model.moe) {
    text += " ep" + std::to_string(layout.expert.ep) + " etp" + std::to_string(layout.expert.etp) +
            " " + to_string(layout.expert.dispatcher);
  }
  text += " mb" + std::to_string(config.training.micro_batch) + " m" +
          std::to_string(layout.num_microbatches);
  return text;
}

RunSummary summarize(const RunConfig& config, const GpuProfile& gpu, const StepProgram& program,
                     const ReplayResult& replay) {
  RunSummary s;
  s.model_name = config.model.name;
  s.cluster_name = config.cluster.name;
  s.num_gpus = static_cast<int>(config.num_gpus);
  s.layout = describe_layout(config);
  s.fidelity = to_string(config.simulation.fidelity);
  s.network_model = config.simulation.network;
  s.attention_backend = std::string(attention_backend_name(
      resolve_attention_backend(config.training, config.model, gpu, config.file)));
  s.cuda_graphs = to_string(config.training.cuda_graphs);
  s.simulated_ranks = static_cast<int>(program.graphs.size());
  const RankIndex critical = critical_rank(program, replay);
  s.critical_rank = static_cast<int>(program.global_rank[critical]);
  s.critical_stage = static_cast<int>(program.stage[critical]);

  s.iteration_time_s = replay.end.seconds();
  s.peak_flops_per_gpu = gpu.peak_flops(config.training.precision);
  set_throughput(
      s, iteration_flops(config.model, config.training, config.layout.sizes.tp, config.num_gpus));

  const MemoryReport& memory = program.memory;
  s.hbm_bytes = memory.hbm_bytes;
  s.peak_bytes = memory.peak_bytes;
  s.peak_allocated_bytes = memory.peak_allocated_bytes;
  s.peak_reserved_bytes = memory.peak_reserved_bytes;
  s.fit_margin = memory.fit_margin;
  s.fits_in_memory = memory.fits_in_memory;
  s.per_stage = stage_memory(memory, program, replay);
  s.notes = config.layout.notes;
  s.notes.insert(s.notes.end(), memory.notes.begin(), memory.notes.end());

  const OpGraph& graph = program.graphs[critical];
  const RankTrace& trace = replay.ranks[critical];
  const double ideal_s = program.model_flops[critical] / s.peak_flops_per_gpu;
  s.time = attribute_time(graph, trace, Streams::kCompute, replay.end, ideal_s);
  const auto by_category = compute_time_by_category(graph, trace, Streams::kCompute);
  const ComputeExcess excess = compute_excess(graph, trace, s.peak_flops_per_gpu);
  for (int kind = 0; kind < kComputeKindCount; ++kind) {
    const auto category = static_cast<std::size_t>(category_at_slot(false, kind));
    s.time.compute_by_kind_s[kind] = by_category[category];
    s.time.ideal_by_kind_s[kind] = by_category[category] - excess.seconds[kind];
  }
  s.kernel_rates = kernel_rates(gpu, config.training.precision);
  s.kernel_families = kernel_families(graph, trace, Streams::kCompute, s.kernel_rates);
  s.walls = summary_walls(s, excess);
  return s;
}

void set_throughput(RunSummary& s, const IterationFlops& flops) {
  s.tokens_per_iteration = flops.tokens;
  s.model_flops_per_iteration = flops.model_per_iteration;
  s.hardware_flops_per_iteration = flops.hardware_per_iteration;
  const double per_gpu_s = s.iteration_time_s * static_cast<double>(s.num_gpus);
  s.tokens_per_s_per_gpu = per_gpu_s > 0 ? s.tokens_per_iteration / per_gpu_s : 0;
  s.model_tflops_per_gpu = per_gpu_s > 0 ? s.model_flops_per_iteration / per_gpu_s / 1e12 : 0;
  s.mfu = s.model_tflops_per_gpu * 1e12 / s.peak_flops_per_gpu;
}

Walls summary_walls(const RunSummary& s, const ComputeExcess& excess) {
  const auto worst = std::max_element(s.per_stage.begin(), s.per_stage.end(),
                                      [](const auto& a, const auto& b) { return a.peak < b.peak; });
  return compute_walls(s.time, excess, *worst, s.hbm_bytes, s.fits_in_memory);
}

}  // namespace wallsim::models
