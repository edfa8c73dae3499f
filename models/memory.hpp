// Memory per GPU of every pipeline stage, analytically (no simulation).
//
// Static bytes (Megatron-LM's mixed-precision Adam; megatron_formulas.md §2): bf16 weights
// (2 bytes/param), fp32 main gradients (4; 2 with grad_reduce_dtype bf16), fp32 master weights
// and Adam moments (12; fewer with the precision-aware optimizer's training.optimizer dtypes,
// optimizer_precision.hpp). With the distributed optimizer those 12 bytes are sharded over the
// DP×CP group, as Megatron really shards them (data-parallel group with context parallel);
// Megatron's estimator divides by dp only (§5.1), so the two differ when cp > 1.
// Stage s holds its layers (TP-sharded attention and MLP ÷ tp, norms whole); the first stage the
// input embedding (V·h/tp); the last stage the final norm and the output layer (V·h/tp) when it
// is untied or pp > 1 (tied embeddings keep a copy on the last stage). Where layers divide by
// pp and cp = 1, the first stage equals Megatron's compute_weight_and_optimizer_memory except
// the final norm, which Megatron spreads as ν·h/pp over all stages and wallsim puts on the last.
//
// Mixture of experts (megatron_formulas.md §2, N_exp): routed-expert weights and gradients are
// sharded over etp·ep (layout.expert), their optimizer state with the distributed optimizer over
// the expert data-parallel group (edp); shared experts and attention ÷ tp, routers replicated
// like norms. MTP layers live on the last stage (Megatron's estimate charges them to the first;
// with pp = 1 the two agree).
//
// Activations: per-layer and embedding/output bytes from activation_memory.hpp (each layer its
// own kind: MoE layers keep more than dense ones), kept alive by the stage's pipeline schedule
// (pipeline_schedule.hpp); full recompute adds the largest layer's complete activations while its
// backward runs. MTP layers add a layer and an output layer's bytes to the last stage.
// Activation offloading keeps only each chunk's last layer per micro-batch, plus two layers in
// transit (one copying out, one copied back ahead of its backward).
// Sharding (layout.data_sharding, ZeRO stages): optimizer state ÷ dp·cp from "optimizer" on,
// gradients from "grads" on, bf16 weights with "params" (routed experts ÷ edp); the ZeRO paper's
// (2 + 2 + K)Ψ / N_d family (Rajbhandari et al. 2020, §5), with 4-byte main gradients.
// Beyond tracked bytes (models/allocator_memory.hpp, docs/reference/allocator.md): `allocated` adds
// the cuBLAS and Transformer Engine workspaces (tensors of PyTorch's allocator, so in
// max_memory_allocated); `reserved` adds the caching allocator's slack (small-pool segments and
// fragmentation, max_memory_reserved); `peak` adds what lives outside the allocator, the CUDA
// context and NCCL's buffers, and is what a GPU must hold. A layout fits when every stage's peak
// is at most (1 - fit_margin) of the GPU's memory (training.memory_allowances).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/layer_placement.hpp"
#include "models/layout.hpp"
#include "models/model_spec.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models {

struct StageParameters {
  double tp_sharded = 0;      // per GPU, already ÷ tp
  double replicated = 0;      // norms, routers
  double expert_sharded = 0;  // routed experts, per GPU, already ÷ (etp·ep)
  double total() const { return tp_sharded + replicated + expert_sharded; }
};

// Parameters one GPU of stage `stage` holds.
StageParameters stage_parameters(const ModelSpec& model, const Layout& layout, std::int64_t stage);

struct StaticBytesPerParam {
  double weights = 2;
  double grads = 4;
  double optimizer = 12;  // master weights + Adam moments, already ÷ the sharding factor
};

// The sharding factor of optimizer state: dp·cp with the distributed optimizer, else 1.
std::int64_t optimizer_shards(const Layout& layout, const TrainingSpec& training);
// The same for routed-expert parameters: layout.expert.edp with the distributed optimizer.
std::int64_t expert_optimizer_shards(const Layout& layout, const TrainingSpec& training);
StaticBytesPerParam static_bytes_per_param(const Layout& layout, const TrainingSpec& training);

// Megatron's compute_weight_and_optimizer_memory, restated (megatron_formulas.md §2): the
// most loaded rank holds L/p layers, the input embedding, final norm/p (and the output layer
// when untied and p = 1) and all MTP layers; bytes per parameter 18, or 6 + 12/dp with the
// distributed optimizer; routed experts ÷ (etp·ep) at 6 + 12/edp.
double megatron_weight_and_optimizer_bytes(const ModelSpec& model, const Layout& layout,
                                           const TrainingSpec& training);

struct StageMemory {
  std::int64_t stage = 0;
  StageLayers layers;
  bool embedding = false;     // holds the input embedding
  bool output_layer = false;  // holds the final norm, output layer and loss
  double parameters = 0;
  double weights = 0;
  double grads = 0;
  double optimizer = 0;  // on the GPU: less the offloaded fraction (training.offload)
  // Host memory the CPU optimizer holds for this rank (training.offload.optimizer_fraction): fp32
  // master weight, gradient copy, exp_avg and exp_avg_sq of each offloaded parameter (16 bytes).
  // Not part of the device's peak. With training.offload.optimizer_states also the staged state.
  double host_optimizer = 0;
  // The chunked optimizer-state offload's windows at the step (master weights and moments staged
  // back from the host; models/optimizer_offload.hpp): with the weights, gradients and resident
  // state they set a peak of their own, after the activations are gone.
  double optimizer_staging = 0;
  double activations = 0;
  double unit_buffers = 0;  // ZeRO-2/3: unsharded unit gradients and gathered unit parameters
  // Weight-gradient placeholders (models/wgrad_buffers.hpp): Transformer Engine's cached ones,
  // held from the first backward on, and what the output layer's placeholder and the
  // embedding's dense gradient, transient within a backward, add to the activations' peak.
  double wgrad_placeholders = 0;
  double grad_transients = 0;
  double workspaces = 0;  // cuBLAS and Transformer Engine workspaces (in allocated)
  // What per-layer CUDA graphs (training.cuda_graphs) reserve beyond eager execution, in
  // `reserved` and not in `allocated`: a static input copy for each captured layer in flight,
  // the graph pool's working set, and the pool's activations still reserved when the optimizer
  // step stages its state (models/memory.cpp, cuda_graph_bytes; docs/reference/cuda_graphs.md).
  double cuda_graphs = 0;
  double allocated = 0;          // tracked bytes + workspaces: max_memory_allocated
  double allocator_slack = 0;    // small-pool segments and fragmentation (reserved - allocated)
  double reserved = 0;           // allocated + allocator_slack: max_memory_reserved
  double outside_allocator = 0;  // CUDA context and NCCL buffers
  double buffers = 0;            // everything beyond tracked bytes: peak - tracked
  double peak = 0;               // reserved + outside_allocator: the device's memory in use
  std::int64_t microbatches_in_flight = 0;  // (micro-batch, chunk) forwards alive at the peak
};

struct MemoryReport {
  std::vector<StageMemory> stages;
  double peak_bytes = 0;            // max over stages of `peak`
  double peak_allocated_bytes = 0;  // max over stages of `allocated`
  double peak_reserved_bytes = 0;   // max over stages of `reserved`
  double fit_margin = 0;            // fraction of hbm_bytes kept free by the fit judgement
  std::int64_t worst_stage = 0;
  double hbm_bytes = 0;
  bool fits_in_memory = false;
  std::int64_t optimizer_shards = 1;
  double megatron_static_bytes = 0;  // Megatron's estimate of the most loaded rank
  std::vector<std::string> notes;
};

// `compute_capability` (major·10 + minor) sizes the cuBLAS workspaces; 90 (Hopper) unless told.
MemoryReport memory_report(const ModelSpec& model, const Layout& layout,
                           const TrainingSpec& training, double hbm_bytes,
                           int compute_capability = 90);

// What activation offloading (training.offload) copies to the host per micro-batch from each
// decoder layer it offloads, by layer: the whole layer's saved activations, or what the listed
// modules save; 0 without offloading. Which layers it offloads: TrainingSpec::offloads_layer.
std::vector<double> offloaded_layer_bytes(const ModelSpec& model, const Layout& layout,
                                          const TrainingSpec& training);

// Whether a device peak fits: peak ≤ (1 - fit_margin)·hbm_bytes.
bool fits_with_margin(double peak_bytes, double hbm_bytes, double fit_margin);

}  // namespace wallsim::models
