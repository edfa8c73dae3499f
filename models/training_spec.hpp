// The `training` and `simulation` sections of a run config.
//
// Keys and defaults are listed in models/README.md. Memory allowances are the bytes a real job
// spends outside weights, gradients, optimizer state and activations; their defaults are
// documented next to MemoryAllowances.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/attention_backend.hpp"
#include "models/cross_entropy.hpp"
#include "models/optimizer_precision.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/quantization.hpp"
#include "sim/hw/dtype.hpp"

namespace wallsim {

class JsonNode;

namespace models {

enum class Recompute { none, selective, full };
const char* to_string(Recompute recompute);

// What the framework captures in CUDA graphs (Megatron-Core's --cuda-graph-scope; Transformer
// Engine's make_graphed_callables): nothing (every kernel issued eagerly), each transformer
// layer's forward and backward, or the whole forward-backward of the step.
enum class CudaGraphs { kNone, kPerLayer, kFullIteration };
const char* to_string(CudaGraphs graphs);  // "none", "per_layer", "full_iteration"

struct OverlapSpec {
  bool tp_comm = false;
  bool dp_grad_reduce = false;
  bool dp_param_gather = false;
  bool cp_comm = true;
  bool ep_comm = false;
  bool shared_expert = false;  // Megatron-Core's moe_shared_expert_overlap
};

// Per-GPU memory beyond weights, gradients, optimizer state and activations
// (`training.memory_allowances`; models/allocator_memory.hpp and docs/reference/allocator.md
// derive the defaults):
//  * cuda_context 512 MiB: CUDA 12 context + loaded kernels of PyTorch/TE, as nvidia-smi shows
//    for an idle process on H100 (several hundred MiB; outside PyTorch's allocator). A round
//    figure, not derived.
//  * workspaces: cuBLAS and Transformer Engine workspaces; unset, PyTorch's and TE's defaults
//    for the GPU's architecture.
//  * comm_buffers: NCCL buffers; unset, nccl_channels × peers × NCCL's per-protocol buffer
//    sizes for each communicator the rank belongs to.
//  * nccl_channels 16: channels per NCCL communicator (NCCL picks 16–32 on NVLink nodes; not
//    measured here).
//  * allocator_slack 0: an extra fraction of the tracked bytes reserved on top of the caching
//    allocator's modelled slack (for a calibrated correction; 0 adds nothing).
//  * fit_margin 0.05: the fraction of the GPU's memory a layout must leave free to fit.
struct MemoryAllowances {
  double cuda_context_bytes = 512.0 * 1024 * 1024;
  std::optional<double> workspace_bytes;
  std::optional<double> comm_buffer_bytes;
  int nccl_channels = 16;
  double allocator_slack = 0.0;
  double fit_margin = 0.05;
};

struct TrainingSpec {
  std::int64_t seq_len = 0;
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 0;
  // training.precision (models/quantization.hpp): the GEMMs' dtype (bf16 | fp8 | fp4) and how
  // their inputs are quantized (none; fp8 per tensor; mxfp8 or nvfp4 block scaling).
  Dtype precision = Dtype::kBf16;
  Quantization quantization = Quantization::kNone;
  Recompute recompute = Recompute::none;
  // Selective recompute: which modules; dense models know core_attn, mlp, layernorm.
  std::vector<std::string> recompute_modules{"core_attn"};
  bool distributed_optimizer = false;
  // A registered pipeline schedule (models/pipeline_schedule.hpp); nullptr: Megatron's choice,
  // "interleaved" when parallel.vpp > 1 and "1f1b" otherwise.
  const PipelineSchedule* schedule = nullptr;
  // fp32 | bf16: the main-gradient buffer, which the gradient reduce-scatter or all-reduce moves
  // (Megatron's --grad-reduce-in-bf16, or --main-grads-dtype bf16 of the precision-aware
  // optimizer, which leaves accumulate_allreduce_grads_in_fp32 off).
  Dtype grad_reduce_dtype = Dtype::kFp32;
  // training.optimizer: storage types of master weights and Adam moments (optimizer_precision.hpp).
  OptimizerPrecision optimizer;
  // training.attention_backend, or kUnfused for training.flash_attention false; nullopt: what
  // Transformer Engine picks on the run's GPU (models/step/attention_backend_choice.hpp).
  std::optional<AttentionBackend> attention_backend;
  bool flash_attention = true;  // false (unfused): the s² attention scores are stored (Korthikanti)
  CudaGraphs cuda_graphs = CudaGraphs::kNone;
  CrossEntropyFusion cross_entropy_fusion = CrossEntropyFusion::kNone;  // models/cross_entropy.hpp
  OverlapSpec overlap;
  // training.offload.activations: each decoder layer's saved activations, except the last layer
  // of each chunk, are copied to host memory after its forward and back before its backward
  // (models/step/pipeline_ops.hpp). true offloads all of them; a list of module names offloads
  // only what those modules save (Megatron-Core's fine-grained activation offloading,
  // offload_module_names(); models/activation_memory.hpp), kept in `offload_modules`.
  bool offload_activations = false;
  std::vector<std::string> offload_modules;  // empty with offload_activations: the whole layer
  // training.offload.layers: whole-layer offloading of only the first N decoder layers of each
  // chunk (Megatron's --cpu-offloading-num-layers, per pipeline rank's block; at most the
  // chunk's layers less one); absent: all but the chunk's last.
  std::optional<std::int64_t> offload_layers;
  // training.offload.optimizer_fraction: Megatron-Core's hybrid device optimizer
  // (--optimizer-cpu-offload --optimizer-offload-fraction F): this fraction of the local optimizer
  // shard's parameters keeps its master weight and Adam moments in host memory and is updated by
  // PyTorch's AdamW on the CPU (models/optimizer_offload.hpp). 0: everything on the GPU.
  double offload_optimizer_fraction = 0;
  // training.offload.optimizer_overlap (--overlap-cpu-optimizer-d2h-h2d): the gradient copies,
  // CPU steps and parameter copies pipeline per parameter on streams of their own; off (Megatron's
  // default) they run one after the other on the compute stream.
  bool offload_optimizer_overlap = false;
  // training.offload.optimizer_states: Megatron-Core's chunked optimizer-state offload
  // (--chunked-optimizer-state-offload, legacy --offload-optimizer-states;
  // --optimizer-state-offload-fraction F): this fraction of the shard's optimizer state (master
  // weights and moments) lives in host memory between steps and is staged back for the GPU's
  // step (models/optimizer_offload.hpp). 0: resident.
  double offload_optimizer_states = 0;
  // training.offload.optimizer_state_chunk_mb (--optimizer-state-offload-chunk-size-mb): the
  // moments come back in chunks of this many MiB through two staging windows; 0 (Megatron's
  // default) brings them back all at once.
  double offload_optimizer_state_chunk_mb = 0;

  // Whether decoder layer `index` of a chunk of `count` layers (0-based, in forward order) is
  // offloaded.
  bool offloads_layer(std::int64_t index, std::int64_t count) const;
  MemoryAllowances memory_allowances;
  // training.expandable_segments: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. Off by
  // default, as PyTorch ships it and as Megatron-Bridge's Slurm performance recipes and the
  // validated B200 launchers leave it (docs/reference/allocator.md).
  bool expandable_segments = false;
  // training.moe_memory_efficient_permutation: the routed experts scale their activation output
  // by the router probabilities before FC2 (Megatron-Core's activation_func_with_probs, the
  // default since the probabilities travel with the dispatched tokens), so the combine keeps no
  // copy of the expert outputs for the probabilities' gradient. false: the older path that
  // multiplies in the unpermute and keeps them (Megatron-Core MoE report, arXiv:2603.07685 §4.1;
  // docs/reference/moe.md).
  bool moe_memory_efficient_permutation = true;

  bool recomputes(const std::string& module) const;
};

TrainingSpec parse_training_spec(const JsonNode& node);

// Whether activation offloading moves decoder layer `index` (0-based, forward order) of a chunk
// of `count` layers: every layer but the chunk's last, or only the first `layers` of them.
bool offloaded_in_chunk(std::int64_t index, std::int64_t count, std::optional<std::int64_t> layers);

// Megatron-Core's --offload-modules choices, in its order: attn_norm, qkv_linear, core_attn,
// attn_proj, mlp_norm, expert_fc1, moe_act.
const std::vector<std::string>& offload_module_names();

// Which ranks a run replays: every GPU, or one per class of ranks that run the same program
// under the same load (models/step/step_program.hpp).
enum class Fidelity { kSymmetric, kFull };
const char* to_string(Fidelity fidelity);  // "symmetric", "full"

struct SimulationSpec {
  // Engine events one step may take before the run stops as unable to finish (0: no limit).
  // The largest shipped job, Llama 3 70B on 1,024 GPUs in full fidelity
  // (configs/bench/llama3-70b-1024gpu-full.json), takes 34 M events; 500 M leaves ~15x headroom
  // (enough for 405B on 16,384 GPUs in full fidelity, ~220 M by scaling) and stops a runaway
  // step after minutes (~1 M events/s) instead of never.
  static constexpr std::int64_t kDefaultMaxEvents = 500'000'000;

  Fidelity fidelity = Fidelity::kSymmetric;
  std::string network = "flow";  // analytical | flow
  std::int64_t max_events = kDefaultMaxEvents;
};

SimulationSpec parse_simulation_spec(const JsonNode& node);

}  // namespace models
}  // namespace wallsim
