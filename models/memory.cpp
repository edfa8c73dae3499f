#include "models/memory.hpp"

#include <algorithm>

#include "models/activation_memory.hpp"
#include "models/allocator_memory.hpp"
#include "models/optimizer_offload.hpp"
#include "models/parameter_count.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/wgrad_buffers.hpp"
#include "sim/core/byte_size.hpp"

namespace wallsim::models {
namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

bool is_last(const Layout& layout, std::int64_t stage) {
  return layout.holds_output(stage);
}

bool is_first(const Layout& layout, std::int64_t stage) {
  return layout.holds_embedding(stage);
}

bool holds_output_weights(const ModelSpec& model, const Layout& layout, std::int64_t stage) {
  return is_last(layout, stage) && (!model.tied_embeddings || layout.output_apart_from_embedding());
}

struct StageActivations {
  double bytes = 0;
  double with_grad_transients = 0;  // the peak with the backward's transient gradients
  std::int64_t in_flight = 0;
};

const StageLayers& layers_of(const Layout& layout, std::int64_t stage) {
  return layout.placement.stages[static_cast<std::size_t>(stage)];
}

// MoE layers among `count` layers from `first`.
std::int64_t moe_layers_in(const ModelSpec& model, std::int64_t first, std::int64_t count) {
  std::int64_t moe = 0;
  for (std::int64_t layer = first; layer < first + count; ++layer) moe += model.is_moe_layer(layer);
  return moe;
}

// One layer's bytes of each kind: [dense, MoE] (the MoE entry is 0 for dense models).
struct LayerKinds {
  double dense = 0;
  double moe = 0;
};

// The MTP layers, on the last stage: each a decoder layer typed like the last, plus its own
// final norm and fp32 logits like the output layer.
double mtp_activation_bytes(const ModelSpec& model, const ActivationSetting& setting) {
  if (model.mtp_layers == 0) return 0.0;
  return d(model.mtp_layers) * (layer_activation_bytes(model, setting, model.layers - 1) +
                                output_activation_bytes(model, setting));
}

// What activation offloading copies to the host per micro-batch from a dense and from an MoE
// layer: the whole layer, or with a module list what those modules save (layer_offload_bytes).
LayerKinds offloaded_per_layer(const ModelSpec& model, const ActivationSetting& setting,
                               const TrainingSpec& training) {
  if (!training.offload_activations) return {0.0, 0.0};
  const auto bytes = [&](std::int64_t layer) {
    return training.offload_modules.empty()
               ? layer_activation_bytes(model, setting, layer)
               : layer_offload_bytes(model, setting, layer, training.offload_modules);
  };
  LayerKinds kinds;
  for (std::int64_t layer = 0; layer < model.layers; ++layer) {
    if (!model.is_moe_layer(layer)) {
      kinds.dense = bytes(layer);
      break;
    }
  }
  if (model.is_moe()) kinds.moe = bytes(model.moe->first_dense_layers);
  return kinds;
}

// Bytes one micro-batch leaves on each chunk of the stage until its backward: the real bytes of
// the layers the chunk holds (MoE and dense layers differ), less what offloading moves to the
// host from every layer but the chunk's last.
std::vector<double> chunk_bytes(const ModelSpec& model, const Layout& layout,
                                const ActivationSetting& setting, std::int64_t stage,
                                const TrainingSpec& training) {
  LayerKinds per_layer{layer_activation_bytes(model, setting), 0.0};
  if (model.is_moe()) {
    const std::int64_t first_moe = model.moe->first_dense_layers;
    per_layer.moe = layer_activation_bytes(model, setting, first_moe);
  }
  const LayerKinds offloaded = offloaded_per_layer(model, setting, training);
  std::vector<double> bytes;
  for (const auto& chunk : layers_of(layout, stage).chunks) {
    if (training.offload_activations && chunk.count > 0) {
      // The offloaded layers (all but the chunk's last, or its first offload.layers) leave
      // their offloaded part on the host.
      double kept = 0;
      for (std::int64_t i = 0; i < chunk.count; ++i) {
        const bool moe = model.is_moe_layer(chunk.first_layer + i);
        const double full = moe ? per_layer.moe : per_layer.dense;
        kept += full - (training.offloads_layer(i, chunk.count)
                            ? (moe ? offloaded.moe : offloaded.dense)
                            : 0.0);
      }
      bytes.push_back(kept);
      continue;
    }
    const std::int64_t moe = moe_layers_in(model, chunk.first_layer, chunk.count);
    bytes.push_back(d(chunk.count - moe) * per_layer.dense + d(moe) * per_layer.moe);
  }
  if (const auto chunk = layout.embedding_chunk_on(stage)) {
    bytes[static_cast<std::size_t>(*chunk)] += embedding_activation_bytes(model, setting);
  }
  if (const auto chunk = layout.output_chunk_on(stage)) {
    bytes[static_cast<std::size_t>(*chunk)] += mtp_activation_bytes(model, setting);
  }
  return bytes;
}

// The output layer's activations (final norm, logits): its backward frees them, in every
// schedule (no weight-gradient pass reads them).
std::vector<double> output_chunk_bytes(const ModelSpec& model, const Layout& layout,
                                       const ActivationSetting& setting, std::int64_t stage) {
  const auto chunk = layout.output_chunk_on(stage);
  if (!chunk) return {};
  std::vector<double> bytes(layers_of(layout, stage).chunks.size(), 0.0);
  bytes[static_cast<std::size_t>(*chunk)] = output_activation_bytes(model, setting);
  return bytes;
}

// The largest full-recompute transient among the stage's layers (MTP layers on the last).
double recompute_transient_bytes(const ModelSpec& model, const Layout& layout,
                                 const ActivationSetting& setting, std::int64_t stage) {
  std::int64_t moe = 0;
  for (const auto& chunk : layers_of(layout, stage).chunks) {
    moe += moe_layers_in(model, chunk.first_layer, chunk.count);
  }
  if (is_last(layout, stage) && model.mtp_layers > 0 && model.mtp_is_moe()) ++moe;
  const double dense = layer_recompute_transient_bytes(model, setting);
  if (moe == 0) return dense;
  return std::max(dense,
                  layer_recompute_transient_bytes(model, setting, model.moe->first_dense_layers));
}

// The output layer's placeholder at the start of its chunk's backward, the embedding's dense
// gradient at the end of its chunk's (models/wgrad_buffers.hpp).
BackwardTransients grad_transients(const ModelSpec& model, const Layout& layout,
                                   std::int64_t stage) {
  const std::size_t chunks = layers_of(layout, stage).chunks.size();
  BackwardTransients t{std::vector<double>(chunks, 0.0), std::vector<double>(chunks, 0.0)};
  if (const auto chunk = layout.output_chunk_on(stage)) {
    t.at_start[static_cast<std::size_t>(*chunk)] =
        output_wgrad_placeholder_bytes(model, layout, stage);
  }
  if (const auto chunk = layout.embedding_chunk_on(stage)) {
    t.at_end[static_cast<std::size_t>(*chunk)] = embedding_grad_bytes(model, layout, stage);
  }
  return t;
}

ActivationSetting stage_setting(const Layout& layout, const TrainingSpec& training) {
  ActivationSetting setting =
      activation_setting(training, layout.sizes.tp, layout.sizes.cp, layout.sequence_parallel);
  setting.etp = layout.expert.etp;
  setting.ep = layout.expert.ep;
  setting.cp_a2a = layout.cp_a2a_only();
  return setting;
}

}  // namespace

std::vector<double> offloaded_layer_bytes(const ModelSpec& model, const Layout& layout,
                                          const TrainingSpec& training) {
  const LayerKinds kinds = offloaded_per_layer(model, stage_setting(layout, training), training);
  std::vector<double> bytes;
  for (std::int64_t layer = 0; layer < model.layers; ++layer) {
    bytes.push_back(model.is_moe_layer(layer) ? kinds.moe : kinds.dense);
  }
  return bytes;
}

namespace {

StageActivations stage_activations(const ModelSpec& model, const Layout& layout,
                                   const TrainingSpec& training, std::int64_t stage) {
  const ActivationSetting setting = stage_setting(layout, training);
  const PipelineSchedule& schedule = *layout.schedule;
  const auto order = schedule.order(layout.pipeline_shape(), stage);
  const std::vector<double> kept = chunk_bytes(model, layout, setting, stage, training);
  const std::vector<double> until_backward = output_chunk_bytes(model, layout, setting, stage);
  StageActivations result;
  result.bytes =
      peak_in_flight_bytes(order, kept, schedule.splits_weight_gradients, until_backward);
  result.with_grad_transients =
      peak_in_flight_bytes(order, kept, schedule.splits_weight_gradients, until_backward,
                           grad_transients(model, layout, stage));
  result.in_flight = peak_in_flight_chunks(order, schedule.splits_weight_gradients);
  double extra = 0;
  if (training.recompute == Recompute::full) {
    extra += recompute_transient_bytes(model, layout, setting, stage);
  }
  if (training.offload_activations) {
    // In transit: a layer's offloaded part copying out while the next runs, and one copied back
    // ahead.
    const LayerKinds offloaded = offloaded_per_layer(model, setting, training);
    extra += 2.0 * std::max(offloaded.dense, offloaded.moe);
  }
  // The output layer's backward runs before any layer's recompute, and the embedding's after
  // the last: the transient gradients never meet the recompute or offload extras.
  result.bytes += extra;
  result.with_grad_transients = std::max(result.bytes, result.with_grad_transients);
  return result;
}

// ZeRO-2/3's transient unit buffers (models/step/data_parallel_ops.hpp): the unsharded
// gradients of the unit whose backward runs and of the one before it, still reduce-scattering;
// with ZeRO-3 also the gathered bf16 parameters of the unit running and of the one prefetched.
// Two of the stage's largest unit, an upper bound of what the replay holds at once.
double unit_buffer_bytes(const ModelSpec& model, const Layout& layout, const TrainingSpec& training,
                         std::int64_t stage) {
  if (layout.data_sharding < DataSharding::kGrads) return 0.0;
  const double tp = d(layout.sizes.tp);
  double largest = 0;
  for (const auto& chunk : layers_of(layout, stage).chunks) {
    for (std::int64_t layer = chunk.first_layer; layer < chunk.first_layer + chunk.count; ++layer) {
      const LayerParameters p = layer_parameters(model, layer);
      largest = std::max(largest, p.tp_sharded() / tp + p.replicated() +
                                      p.experts / d(layout.expert.etp * layout.expert.ep));
    }
  }
  const double embedding = embedding_parameters(model, layout.sizes.tp) / tp;
  if (is_first(layout, stage) || holds_output_weights(model, layout, stage)) {
    largest = std::max(largest, embedding);
  }
  double per_param = dtype_bytes(training.grad_reduce_dtype);
  if (layout.data_sharding == DataSharding::kParams) per_param += 2.0;
  return 2.0 * largest * per_param;
}

// The cuBLAS workspace of PyTorch's compute stream and Transformer Engine's (allocator_memory.hpp),
// unless training.memory_allowances.workspaces states them.
double workspace_bytes(const TrainingSpec& training, int compute_capability) {
  if (training.memory_allowances.workspace_bytes)
    return *training.memory_allowances.workspace_bytes;
  return torch_cublas_workspace_bytes(compute_capability) +
         te_cublas_workspace_bytes(compute_capability, training.overlap.tp_comm);
}

// NCCL buffers of the communicators a rank belongs to: TP, CP, DP×CP (the gradient reduction
// and distributed optimizer; with hybrid sharding also its shard and replica groups), EP, each a
// ring receiving from one peer per channel, and the pipeline's send/recv to the stages before and
// after; unless memory_allowances.comm_buffers.
double nccl_buffer_bytes(const Layout& layout, const MemoryAllowances& allowances) {
  if (allowances.comm_buffer_bytes) return *allowances.comm_buffer_bytes;
  const int channels = allowances.nccl_channels;
  double bytes = 0;
  for (std::int64_t size : {layout.sizes.tp, layout.sizes.cp, layout.dp_cp(), layout.expert.ep}) {
    if (size > 1) bytes += nccl_communicator_bytes(channels, 1);
  }
  // Hybrid sharding adds the shard groups' and the replica groups' communicators.
  if (layout.shard_group > 0) {
    for (std::int64_t size : {layout.dp_shards(), layout.dp_replicas()}) {
      if (size > 1) bytes += nccl_communicator_bytes(channels, 1);
    }
  }
  if (layout.sizes.pp > 1) bytes += nccl_communicator_bytes(channels, 2);
  return bytes;
}

// Layers whose forward has run and whose backward (B) has not, for all micro-batches and chunks
// together, at the most: chunk c's forward adds its layers, its backward takes them away.
double peak_layers_in_flight(const std::vector<ScheduleItem>& order,
                             const std::vector<ChunkLayers>& chunks) {
  double held = 0;
  double peak = 0;
  for (const auto& item : order) {
    const double layers = d(chunks[static_cast<std::size_t>(item.chunk)].count);
    if (item.forward()) peak = std::max(peak, held += layers);
    if (item.pass == Pass::kBackward) held -= layers;
  }
  return peak;
}

// Whether per-layer graphs capture all of decoder layer `layer`: a dense layer, or an MoE layer
// whose capacity factor fixes its shapes. A dropless MoE layer runs its dispatcher and experts
// eagerly; its attention and router are captured (Megatron-Core's attn and moe_router scopes).
bool captured_whole(const ModelSpec& model, std::int64_t layer) {
  return !model.is_moe_layer(layer) || model.moe->capacity_factor.has_value();
}

struct GraphBytes {
  double reserved = 0;            // static inputs and the pool's working set
  double pooled_activations = 0;  // the captured share of the activations' peak
};

// What CUDA graphs hold beyond eager execution (docs/reference/cuda_graphs.md has the sources).
// Captures share one private memory pool in the order they run (Transformer Engine's
// make_graphed_callables, Megatron-Core's TECudaGraphHelper), so saved activations take what
// eager execution takes, but
//   * every captured layer in flight has a static input (PP = 1: one per layer, its graph
//     replayed for each micro-batch; PP > 1: one per layer and micro-batch between forward and
//     backward, buffers of one shape reused across layers and chunks once their backward has run,
//     Megatron-Core's consumed_sample_queue) holding a copy of a tensor alive beside it: the
//     previous graph's output, which the pool keeps until that graph's backward, or the received
//     pipeline input kept for its gradient; dropless, the router's input beside the normed
//     hidden state the experts save. One hidden state (layer_input_bytes) per layer and slot;
//   * the pool keeps its own working set, which eager kernels cannot use: one captured region's
//     activations for a micro-batch (the whole layer, or a dropless MoE layer's attention half);
//   * the pool stays reserved through the optimizer step, so memory the step allocates (the
//     staged optimizer state) cannot reuse the captured activations.
// full_iteration captures the forward-backward as one graph whose only static inputs are the
// batch: its pool holds what eager execution holds at its peak, and the step that follows
// allocates nothing large (Megatron refuses it with the staged optimizer state), so nothing.
GraphBytes cuda_graph_bytes(const ModelSpec& model, const Layout& layout,
                            const TrainingSpec& training, std::int64_t stage, double activations) {
  GraphBytes g;
  if (training.cuda_graphs != CudaGraphs::kPerLayer) return g;
  const ActivationSetting setting = stage_setting(layout, training);
  const auto& chunks = layers_of(layout, stage).chunks;
  g.reserved =
      peak_layers_in_flight(layout.schedule->order(layout.pipeline_shape(), stage), chunks) *
      layer_input_bytes(model, setting);
  double working_set = 0;
  double captured = 0;
  double kept = 0;
  for (const ChunkLayers& chunk : chunks) {
    for (std::int64_t layer = chunk.first_layer; layer < chunk.first_layer + chunk.count; ++layer) {
      const bool whole = captured_whole(model, layer);
      working_set =
          std::max(working_set, whole ? layer_recompute_transient_bytes(model, setting, layer)
                                      : attention_part_bytes(model, setting, layer));
      const double layer_kept = layer_activation_bytes(model, setting, layer);
      kept += layer_kept;
      captured += whole ? layer_kept
                        : std::min(layer_kept, layer_offload_bytes(model, setting, layer,
                                                                   {"attn_norm", "qkv_linear",
                                                                    "core_attn", "attn_proj"}));
    }
  }
  g.reserved += working_set;
  g.pooled_activations = kept > 0 ? activations * captured / kept : 0.0;
  return g;
}

// Allocated, reserved and device bytes on top of the tracked ones (memory.hpp).
void add_device_bytes(const ModelSpec& model, const Layout& layout, const TrainingSpec& training,
                      int compute_capability, StageMemory& m) {
  const MemoryAllowances& allowances = training.memory_allowances;
  // The step's own peak (staged optimizer state) when it exceeds the activations' one.
  const double step =
      m.weights + m.grads + m.optimizer + m.wgrad_placeholders + m.optimizer_staging;
  const double tracked = std::max(m.weights + m.grads + m.optimizer + m.activations +
                                      m.unit_buffers + m.wgrad_placeholders + m.grad_transients,
                                  step);
  m.workspaces = workspace_bytes(training, compute_capability);
  m.allocated = tracked + m.workspaces;
  AllocatorSettings settings;
  settings.expandable_segments = training.expandable_segments;
  const double largest_layer =
      recompute_transient_bytes(model, layout, stage_setting(layout, training), m.stage);
  m.allocator_slack =
      allocator_slack_bytes(settings, largest_layer) + allowances.allocator_slack * tracked;
  const GraphBytes graphs = cuda_graph_bytes(model, layout, training, m.stage, m.activations);
  m.cuda_graphs = graphs.reserved + std::max(0.0, step + graphs.pooled_activations - tracked);
  m.reserved = m.allocated + m.allocator_slack + m.cuda_graphs;
  m.outside_allocator = allowances.cuda_context_bytes + nccl_buffer_bytes(layout, allowances);
  m.peak = m.reserved + m.outside_allocator;
  m.buffers = m.peak - tracked;
}

StageMemory stage_memory(const ModelSpec& model, const Layout& layout, const TrainingSpec& training,
                         std::int64_t stage, int compute_capability) {
  StageMemory m;
  m.stage = stage;
  m.layers = layout.placement.stages[static_cast<std::size_t>(stage)];
  m.embedding = is_first(layout, stage);
  m.output_layer = is_last(layout, stage);
  const StageParameters parameters = stage_parameters(model, layout, stage);
  m.parameters = parameters.total();
  const StaticBytesPerParam per_param = static_bytes_per_param(layout, training);
  const double dense = parameters.tp_sharded + parameters.replicated;
  const double expert = parameters.expert_sharded;
  const double dense_shards = d(optimizer_shards(layout, training));
  const double expert_shards = d(expert_optimizer_shards(layout, training));
  // Sharded over DP×CP (expert DP for routed experts) from the stage that shards them on.
  const auto held = [&](DataSharding from) {
    return layout.data_sharding >= from ? dense / dense_shards + expert / expert_shards
                                        : dense + expert;
  };
  m.weights = per_param.weights * held(DataSharding::kParams);
  m.grads = per_param.grads * held(DataSharding::kGrads);
  const double offloaded = training.offload_optimizer_fraction;
  const double staged = training.offload_optimizer_states;
  const double shard = held(DataSharding::kOptimizer);
  m.optimizer =
      optimizer_state_bytes_per_param(training.optimizer) * shard * (1.0 - offloaded - staged);
  m.host_optimizer = kCpuOptimizerHostBytesPerParam * shard * offloaded +
                     optimizer_state_bytes_per_param(training.optimizer) * shard * staged;
  if (staged > 0) {
    m.optimizer_staging =
        state_staging(training.optimizer, shard * staged, training.offload_optimizer_state_chunk_mb)
            .total();
  }
  const StageActivations activations = stage_activations(model, layout, training, stage);
  m.activations = activations.bytes;
  m.grad_transients = activations.with_grad_transients - activations.bytes;
  m.wgrad_placeholders = te_wgrad_placeholder_bytes(model, layout, stage);
  m.microbatches_in_flight = activations.in_flight;
  m.unit_buffers = unit_buffer_bytes(model, layout, training, stage);
  add_device_bytes(model, layout, training, compute_capability, m);
  return m;
}

void add_notes(const ModelSpec& model, const Layout& layout, const TrainingSpec& training,
               MemoryReport& report) {
  if (layout.shard_group > 0) {
    report.notes.push_back("hybrid sharding: state sharded over groups of " +
                           std::to_string(layout.dp_shards()) + " DP×CP ranks, replicated " +
                           std::to_string(layout.dp_replicas()) + " times");
  } else if (training.distributed_optimizer && layout.sizes.cp > 1) {
    report.notes.push_back(
        "distributed optimizer state sharded over dp·cp = " + std::to_string(layout.dp_cp()) +
        " as Megatron shards it; Megatron's memory estimator divides by dp = " +
        std::to_string(layout.sizes.dp) + " only");
  }
  if (training.offload_optimizer_states > 0) {
    double host = 0, staging = 0;
    for (const StageMemory& stage : report.stages) {
      host = std::max(host, stage.host_optimizer);
      staging = std::max(staging, stage.optimizer_staging);
    }
    report.notes.push_back(
        "optimizer: " +
        std::to_string(static_cast<int>(training.offload_optimizer_states * 100 + 0.5)) +
        "% of each shard's state kept in host memory between steps (up to " + format_bytes(host) +
        " per GPU), staged back for the step through " + format_bytes(staging) + " of windows");
  }
  if (training.offload_optimizer_fraction > 0) {
    double host = 0;
    for (const StageMemory& stage : report.stages) host = std::max(host, stage.host_optimizer);
    report.notes.push_back(
        "optimizer: " +
        std::to_string(static_cast<int>(training.offload_optimizer_fraction * 100 + 0.5)) +
        "% of each shard's parameters stepped on the CPU; host memory per GPU up to " +
        format_bytes(host) + " (fp32 master, gradient and moments)");
  }
  if (training.cuda_graphs != CudaGraphs::kNone) {
    double graphs = 0;
    for (const StageMemory& stage : report.stages) graphs = std::max(graphs, stage.cuda_graphs);
    if (graphs > 0)
      report.notes.push_back(
          std::string("CUDA graphs (") + to_string(training.cuda_graphs) + "): up to " +
          format_bytes(graphs) +
          " per GPU reserved beyond eager execution (`cuda_graphs`: static layer inputs, the graph "
          "pool's working set and its activations held through the optimizer step)");
  }
  if (layout.parameter_copies() > 1) {
    const std::int64_t group = layout.dp_cp() * layout.parameter_copies();
    report.notes.push_back(
        layout.schedule->name +
        ": each stage holds two model chunks, stage s the layers of "
        "positions s and pp - 1 - s, so every layer's weights and gradients are kept twice; the "
        "two copies' gradients are reduced together over " +
        std::to_string(group) + " ranks (both stages' dp·cp)" +
        (training.distributed_optimizer ? ", which the distributed optimizer shards over" : ""));
  }
  if (model.tied_embeddings && layout.output_apart_from_embedding()) {
    report.notes.push_back(
        "tied embeddings: the last stage keeps a copy of the embedding for the output layer");
  }
  if (model.is_moe()) {
    report.notes.push_back("routed experts sharded over etp·ep = " +
                           std::to_string(layout.expert.etp * layout.expert.ep) +
                           "; their optimizer state over " +
                           std::to_string(expert_optimizer_shards(layout, training)) +
                           " (expert data parallelism with the distributed optimizer)");
  }
  if (model.mtp_layers > 0) {
    report.notes.push_back(
        "MTP layers counted on the last stage; Megatron's estimate charges "
        "them to the first");
  }
}

// Σ over decoder layers [first, first + count) of `part` of each layer's parameters.
template <typename Part>
double layer_sum(const ModelSpec& model, std::int64_t first, std::int64_t count, Part part) {
  double sum = 0;
  for (std::int64_t layer = first; layer < first + count; ++layer) {
    sum += part(layer_parameters(model, layer));
  }
  return sum;
}

double tp_part(const LayerParameters& p) {
  return p.tp_sharded();
}
double replicated_part(const LayerParameters& p) {
  return p.replicated();
}
double expert_part(const LayerParameters& p) {
  return p.experts;
}

}  // namespace

StageParameters stage_parameters(const ModelSpec& model, const Layout& layout, std::int64_t stage) {
  const double tp = d(layout.sizes.tp);
  const double embedding = embedding_parameters(model, layout.sizes.tp);
  double tp_sharded = 0;
  double replicated = 0;
  double experts = 0;
  for (const auto& chunk : layers_of(layout, stage).chunks) {
    tp_sharded += layer_sum(model, chunk.first_layer, chunk.count, tp_part);
    replicated += layer_sum(model, chunk.first_layer, chunk.count, replicated_part);
    experts += layer_sum(model, chunk.first_layer, chunk.count, expert_part);
  }
  if (is_last(layout, stage)) {
    const LayerParameters mtp = mtp_layer_parameters(model);
    tp_sharded += d(model.mtp_layers) * mtp.tp_sharded();
    replicated += d(model.mtp_layers) * mtp.replicated();
    experts += d(model.mtp_layers) * mtp.experts;
  }
  StageParameters p;
  p.tp_sharded = tp_sharded / tp;
  p.replicated = replicated;
  p.expert_sharded = experts / d(layout.expert.etp * layout.expert.ep);
  if (is_first(layout, stage)) p.tp_sharded += embedding / tp;
  if (holds_output_weights(model, layout, stage)) p.tp_sharded += embedding / tp;
  if (is_last(layout, stage)) p.replicated += norm_params_per_element(model.norm) * d(model.hidden);
  return p;
}

// A schedule with two parameter copies (DualPipe) shards over both copies' data-parallel ranks.
std::int64_t optimizer_shards(const Layout& layout, const TrainingSpec&) {
  return layout.data_sharding >= DataSharding::kOptimizer
             ? layout.dp_shards() * layout.parameter_copies()
             : 1;
}

std::int64_t expert_optimizer_shards(const Layout& layout, const TrainingSpec&) {
  return layout.data_sharding >= DataSharding::kOptimizer
             ? layout.expert.edp * layout.parameter_copies()
             : 1;
}

StaticBytesPerParam static_bytes_per_param(const Layout& layout, const TrainingSpec& training) {
  StaticBytesPerParam b;
  b.grads = dtype_bytes(training.grad_reduce_dtype);
  b.optimizer =
      optimizer_state_bytes_per_param(training.optimizer) / d(optimizer_shards(layout, training));
  return b;
}

double megatron_weight_and_optimizer_bytes(const ModelSpec& model, const Layout& layout,
                                           const TrainingSpec& training) {
  const double p = d(layout.sizes.pp);
  const double t = d(layout.sizes.tp);
  const double embedding = embedding_parameters(model, layout.sizes.tp);
  const LayerParameters mtp = mtp_layer_parameters(model);
  const double mtp_layers = d(model.mtp_layers);
  double n_tp =
      (layer_sum(model, 0, model.layers, tp_part) / p + mtp_layers * mtp.tp_sharded() + embedding) /
      t;
  if (!model.tied_embeddings && layout.sizes.pp == 1) n_tp += embedding / t;
  const double final_norm = norm_params_per_element(model.norm) * d(model.hidden);
  const double n_rep = (layer_sum(model, 0, model.layers, replicated_part) + final_norm) / p +
                       mtp_layers * mtp.replicated();
  const double n_exp =
      (layer_sum(model, 0, model.layers, expert_part) / p + mtp_layers * mtp.experts) /
      d(layout.expert.etp * layout.expert.ep);
  auto beta = [&](std::int64_t shards) {
    return training.distributed_optimizer ? 6.0 + 12.0 / d(shards) : 18.0;
  };
  return (n_tp + n_rep) * beta(layout.sizes.dp) + n_exp * beta(layout.expert.edp);
}

bool fits_with_margin(double peak_bytes, double hbm_bytes, double fit_margin) {
  return peak_bytes <= (1.0 - fit_margin) * hbm_bytes;
}

MemoryReport memory_report(const ModelSpec& model, const Layout& layout,
                           const TrainingSpec& training, double hbm_bytes, int compute_capability) {
  MemoryReport report;
  for (std::int64_t stage = 0; stage < layout.sizes.pp; ++stage) {
    report.stages.push_back(stage_memory(model, layout, training, stage, compute_capability));
    const StageMemory& s = report.stages.back();
    report.peak_allocated_bytes = std::max(report.peak_allocated_bytes, s.allocated);
    report.peak_reserved_bytes = std::max(report.peak_reserved_bytes, s.reserved);
    if (s.peak > report.peak_bytes) {
      report.peak_bytes = s.peak;
      report.worst_stage = stage;
    }
  }
  report.hbm_bytes = hbm_bytes;
  report.fit_margin = training.memory_allowances.fit_margin;
  report.fits_in_memory = fits_with_margin(report.peak_bytes, hbm_bytes, report.fit_margin);
  report.optimizer_shards = optimizer_shards(layout, training);
  report.megatron_static_bytes = megatron_weight_and_optimizer_bytes(model, layout, training);
  add_notes(model, layout, training, report);
  return report;
}

}  // namespace wallsim::models
