// The ops of one micro-batch through one transformer layer, the input embedding and the
// output layer, forward and backward, on one rank (mechanics.md §1.1; byte counts of the
// memory-bound kernels from hardware.md §6.2, e = elements of the tensor, bf16):
//
//   forward   ln1 (4e) → qkv (column) → core attention (flash, or unfused with
//             flash_attention false) → proj (row) → residual/dropout (6e,
//             +e mask with dropout) → ln2 (4e) → fc1 (column) → activation (GeLU 4e, SwiGLU 6e
//             of the f/t output) → fc2 (row) → residual/dropout
//   backward  the reverse: residual (6e) → fc2 → activation (GeLU 6e, SwiGLU 10e) → fc1 → ln2
//             (6e) → residual → proj → [recomputed attention] → attention → qkv → ln1
// With context parallelism core attention exchanges K and V over the CP group (cp_attention.hpp).
// Norms and residuals work on the sequence shard with SP (e ÷ t).
//
// Memory: a layer's forward allocates layer_activation_bytes at its first op and its backward
// frees them at its last; full recompute re-runs the forward (with its TP collectives) just
// before the backward and holds layer_recompute_transient_bytes meanwhile; selective recompute
// re-runs core attention, the MLP (fc1, activation, fc2) and the norms it lists.
#pragma once

#include <algorithm>

#include <vector>

#include "models/step/cp_attention.hpp"
#include "models/step/moe_ops.hpp"
#include "models/step/op_emitter.hpp"
#include "models/step/step_context.hpp"
#include "models/step/tp_linear.hpp"

namespace wallsim::models {

struct LayerMemory {
  double layer_bytes = 0;      // kept per layer and micro-batch until the backward
  double transient_bytes = 0;  // full recompute: held while the layer's backward runs
  double moe_layer_bytes = 0;  // the same for an MoE layer
  double embedding_bytes = 0;
  double output_bytes = 0;
  // Transient within one backward (models/wgrad_buffers.hpp): the output layer's weight-
  // gradient placeholder and the embedding table's dense gradient.
  double output_placeholder_bytes = 0;
  double embedding_grad_bytes = 0;
};

// An MoE layer's forward or backward between its phases (the EP overlap).
struct LayerForward {
  std::int64_t microbatch = 0, layer = 0;
  MoeForward moe;
};
struct LayerBackward {
  std::int64_t microbatch = 0, layer = 0;
  MoeBackward moe;
};

class LayerOps {
 public:
  LayerOps(OpEmitter& emit, const LayerDims& dims, const TpSetting& tp, const CpSetting& cp,
           const RecomputePlan& recompute, const LayerMemory& memory, bool holds_output_weights,
           const std::optional<MoeSpec>& moe = std::nullopt, const MoeSetting& moe_setting = {});

  // Each returns the op the next part of the program waits for; `deps` are the cross-stream
  // ops the first op waits for (a pipeline receive, a parameter all-gather).
  OpIndex forward(std::int64_t microbatch, std::int64_t layer, const Deps& deps);
  // Appends the gradients that become ready, in the order Megatron buckets them (reverse
  // registration order: fc2, fc1, ln2, proj, qkv, ln1).
  OpIndex backward(std::int64_t microbatch, std::int64_t layer, const Deps& deps,
                   std::vector<GradReady>& grads);

  // Megatron's EP overlap (combined 1F1B, mechanics.md §4.2) runs an MoE layer in phases so that
  // another micro-batch's phases fill its all-to-alls: begin (everything up to the dispatch or,
  // backward, the combine), experts (up to the combine / the dispatch back), end. Layers under
  // full or `moe` recompute are not overlappable.
  bool overlappable(std::int64_t layer) const;
  LayerForward forward_begin(std::int64_t microbatch, std::int64_t layer, const Deps& deps);
  void forward_experts(LayerForward& state);
  OpIndex forward_end(LayerForward& state);
  LayerBackward backward_begin(std::int64_t microbatch, std::int64_t layer, const Deps& deps);
  void backward_experts(LayerBackward& state);
  OpIndex backward_end(LayerBackward& state, std::vector<GradReady>& grads);

  OpIndex embedding_forward(std::int64_t microbatch, const Deps& deps);
  OpIndex embedding_backward(std::int64_t microbatch, std::vector<GradReady>& grads);
  OpIndex output_forward(std::int64_t microbatch, const Deps& deps);
  OpIndex output_backward(std::int64_t microbatch, const Deps& deps, std::vector<GradReady>& grads);
  // The MTP block after the output layer (DeepSeek-V3; megatron_formulas.md §4): per MTP layer
  // two norms, the 2h→h projection, a decoder layer and logits through the shared output head.
  OpIndex mtp_forward(std::int64_t microbatch, const Deps& deps);
  OpIndex mtp_backward(std::int64_t microbatch, const Deps& deps, std::vector<GradReady>& grads);

  // The parameter units of a layer / the embedding / the output side in that same order.
  std::vector<ParamUnit> layer_units(std::int64_t layer) const;
  std::vector<ParamUnit> embedding_units() const;
  std::vector<ParamUnit> output_units() const;
  std::vector<ParamUnit> mtp_units() const;  // in backward order

 private:
  // The cross-entropy's kernels and TP collectives after the logits (models/cross_entropy.hpp).
  OpIndex cross_entropy_forward(OpIndex logits_ready);
  void cross_entropy_backward(const Deps& deps);
  OpIndex forward_ops(std::int64_t layer, const Deps& deps);
  OpIndex attention_block_forward(const Deps& deps);
  // MTP layers (index ≥ L) are typed like the last decoder layer.
  bool moe_layer(std::int64_t layer) const {
    return moe_ && moe_->is_moe_layer(std::min(layer, dims_.layers - 1));
  }
  // Each takes the ops its input comes from and returns those the next op waits for.
  Deps core_attention_forward(const Deps& producer);
  Deps core_attention_backward(const Deps& producer);
  double score_elements(const AttentionShape& call) const;
  Deps producer() const;
  OpIndex mlp_backward(std::int64_t layer, const Deps& deps, std::vector<GradReady>& grads);
  OpIndex attention_backward(std::int64_t layer, std::vector<GradReady>& grads);
  void tag(std::int64_t microbatch, std::optional<std::int64_t> layer, const std::string& prefix,
           bool recompute = false);

  GemmShape qkv_shape() const;
  std::vector<std::pair<std::string, GemmShape>> mla_shapes() const;  // after qkv_shape's GEMM
  double attention_in_params() const;
  GemmShape proj_shape() const;
  GemmShape fc1_shape() const;
  GemmShape fc2_shape() const;
  GemmShape output_shape() const;
  GemmShape mtp_projection_shape() const;
  double norm_forward_bytes() const;
  double norm_backward_bytes() const;
  double residual_bytes() const;
  double activation_forward_bytes() const;
  double activation_backward_bytes() const;

  OpEmitter& emit_;
  LayerDims dims_;
  TpSetting tp_;
  CpSetting cp_;
  RecomputePlan recompute_;
  LayerMemory memory_;
  bool holds_output_weights_;
  TpLinear linear_;
  TpLinear output_linear_;  // Megatron's output layer is not a TE module: no userbuffer overlap
  CpAttention cp_attention_;
  std::optional<MoeSpec> moe_;
  std::optional<MoeOps> moe_ops_;
};

}  // namespace wallsim::models
