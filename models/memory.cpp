#include "models/memory.hpp"

#include <algorithm>

#include "models/activation_memory.hpp"
#include "models/parameter_count.hpp"
#include "models/pipeline_schedule.hpp"

namespace wallsim::models {
namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

bool is_last(const Layout& layout, std::int64_t stage) {
  return stage == layout.sizes.pp - 1;
}

bool holds_output_weights(const ModelSpec& model, const Layout& layout, std::int64_t stage) {
  return is_last(layout, stage) && (!model.tied_embeddings || layout.sizes.pp > 1);
}

struct StageActivations {
  double bytes = 0;
  std::int64_t in_flight = 0;
};

// Bytes one micro-batch leaves on each chunk of the stage until its backward.
std::vector<double> chunk_bytes(const ModelSpec& model, const Layout& layout,
                                const ActivationSetting& setting, std::int64_t stage) {
  const auto& stage_layers = layout.placement.stages[static_cast<std::size_t>(stage)];
  const double per_layer = layer_activation_bytes(model, setting);
  std::vector<double> bytes;
  for (const auto& chunk : stage_layers.chunks) bytes.push_back(d(chunk.count) * per_layer);
  if (stage == 0) bytes.front() += embedding_activation_bytes(model, setting);
  if (is_last(layout, stage)) bytes.back() += output_activation_bytes(model, setting);
  return bytes;
}

StageActivations stage_activations(const ModelSpec& model, const Layout& layout,
                                   const TrainingSpec& training, std::int64_t stage) {
  const ActivationSetting setting =
      activation_setting(training, layout.sizes.tp, layout.sizes.cp, layout.sequence_parallel);
  const auto schedule = stage_schedule(layout.sizes.pp, layout.vpp, layout.num_microbatches, stage);
  StageActivations result;
  result.bytes = peak_in_flight_bytes(schedule, chunk_bytes(model, layout, setting, stage));
  result.in_flight = peak_in_flight_chunks(schedule);
  if (training.recompute == Recompute::full) {
    result.bytes += layer_recompute_transient_bytes(model, setting);
  }
  return result;
}

double buffer_bytes(const MemoryAllowances& allowances, double tracked_bytes) {
  return allowances.cuda_context_bytes + allowances.workspace_bytes + allowances.comm_buffer_bytes +
         allowances.allocator_slack * tracked_bytes;
}

StageMemory stage_memory(const ModelSpec& model, const Layout& layout, const TrainingSpec& training,
                         std::int64_t stage) {
  StageMemory m;
  m.stage = stage;
  m.layers = layout.placement.stages[static_cast<std::size_t>(stage)];
  m.embedding = stage == 0;
  m.output_layer = is_last(layout, stage);
  m.parameters = stage_parameters(model, layout, stage).total();
  const StaticBytesPerParam per_param = static_bytes_per_param(layout, training);
  m.weights = per_param.weights * m.parameters;
  m.grads = per_param.grads * m.parameters;
  m.optimizer = per_param.optimizer * m.parameters;
  const StageActivations activations = stage_activations(model, layout, training, stage);
  m.activations = activations.bytes;
  m.microbatches_in_flight = activations.in_flight;
  const double tracked = m.weights + m.grads + m.optimizer + m.activations;
  m.buffers = buffer_bytes(training.memory_allowances, tracked);
  m.peak = tracked + m.buffers;
  return m;
}

void add_notes(const ModelSpec& model, const Layout& layout, const TrainingSpec& training,
               MemoryReport& report) {
  if (training.distributed_optimizer && layout.sizes.cp > 1) {
    report.notes.push_back(
        "distributed optimizer state sharded over dp·cp = " + std::to_string(layout.dp_cp()) +
        " as Megatron shards it; Megatron's memory estimator divides by dp = " +
        std::to_string(layout.sizes.dp) + " only");
  }
  if (model.tied_embeddings && layout.sizes.pp > 1) {
    report.notes.push_back(
        "tied embeddings: the last stage keeps a copy of the embedding for the output layer");
  }
}

}  // namespace

StageParameters stage_parameters(const ModelSpec& model, const Layout& layout, std::int64_t stage) {
  const LayerParameters layer = layer_parameters(model);
  const double layers = d(layout.placement.stages[static_cast<std::size_t>(stage)].total());
  const double tp = d(layout.sizes.tp);
  const double embedding = embedding_parameters(model, layout.sizes.tp);
  StageParameters p;
  p.tp_sharded = layers * layer.tp_sharded() / tp;
  p.replicated = layers * layer.norms;
  if (stage == 0) p.tp_sharded += embedding / tp;
  if (holds_output_weights(model, layout, stage)) p.tp_sharded += embedding / tp;
  if (is_last(layout, stage)) p.replicated += norm_params_per_element(model.norm) * d(model.hidden);
  return p;
}

std::int64_t optimizer_shards(const Layout& layout, const TrainingSpec& training) {
  return training.distributed_optimizer ? layout.dp_cp() : 1;
}

StaticBytesPerParam static_bytes_per_param(const Layout& layout, const TrainingSpec& training) {
  StaticBytesPerParam b;
  b.grads = training.grad_reduce_dtype == "bf16" ? 2.0 : 4.0;
  b.optimizer = 12.0 / d(optimizer_shards(layout, training));
  return b;
}

double megatron_weight_and_optimizer_bytes(const ModelSpec& model, const Layout& layout,
                                           const TrainingSpec& training) {
  const LayerParameters layer = layer_parameters(model);
  const double p = d(layout.sizes.pp);
  const double t = d(layout.sizes.tp);
  const double embedding = embedding_parameters(model, layout.sizes.tp);
  double n_tp = (d(model.layers) * layer.tp_sharded() / p + embedding) / t;
  if (!model.tied_embeddings && layout.sizes.pp == 1) n_tp += embedding / t;
  const double final_norm = norm_params_per_element(model.norm) * d(model.hidden);
  const double n_rep = (d(model.layers) * layer.norms + final_norm) / p;
  const double beta = training.distributed_optimizer ? 6.0 + 12.0 / d(layout.sizes.dp) : 18.0;
  return (n_tp + n_rep) * beta;
}

MemoryReport memory_report(const ModelSpec& model, const Layout& layout,
                           const TrainingSpec& training, double hbm_bytes) {
  MemoryReport report;
  for (std::int64_t stage = 0; stage < layout.sizes.pp; ++stage) {
    report.stages.push_back(stage_memory(model, layout, training, stage));
    if (report.stages.back().peak > report.peak_bytes) {
      report.peak_bytes = report.stages.back().peak;
      report.worst_stage = stage;
    }
  }
  report.hbm_bytes = hbm_bytes;
  report.fits_in_memory = report.peak_bytes <= hbm_bytes;
  report.optimizer_shards = optimizer_shards(layout, training);
  report.megatron_static_bytes = megatron_weight_and_optimizer_bytes(model, layout, training);
  add_notes(model, layout, training, report);
  return report;
}

}  // namespace wallsim::models
