// Activation bytes a transformer layer keeps for its backward pass, per micro-batch.
//
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
// arXiv:2205.05198, §4 and Table 2; shared/reference/mechanics.md §1.2) count, per layer, with
// 2-byte activations and 1-byte dropout masks, s tokens, micro-batch b, hidden h, a heads:
//
//   attention  QKV input 2sbh, Q and K 4sbh, V 2sbh, softmax output 2as²b, softmax-dropout mask
//              as²b, dropout output 2as²b, projection input 2sbh, dropout mask sbh
//   MLP        FC1 input 2sbh, GeLU input 8sbh, FC2 input 8sbh, dropout mask sbh
//   norms      two inputs, 4sbh                      total sbh(34 + 5as/h)
//
// Tensor parallelism shards everything but the 10sbh of norm inputs, QKV/FC1 inputs and
// dropout masks; sequence parallelism shards those too. This module keeps every term and
// generalises it to the real shape: Q is 2·s·b·n·d, K and V 2·s·b·g·d each (GQA), the
// activation input 2·s·b·f (2·s·b·2f with SwiGLU), the FC2 input 2·s·b·f; dropout masks only
// when the model has dropout; the s² attention tensors only without flash attention (a fused
// kernel keeps just its output) and unless core attention is recomputed. Recomputing `mlp`
// drops the activation and FC2 inputs, `layernorm` the norm outputs (QKV and FC1 inputs).
// Full recompute keeps only the layer input, 2sbh (÷t with SP). Context parallelism gives each
// rank s/c tokens (mechanics.md §1.2). With GPT shapes the rows of Table 2 come out exactly.
#pragma once

#include <cstdint>

#include "models/model_spec.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models {

struct ActivationSetting {
  std::int64_t seq_len = 0;  // s, before context-parallel sharding
  std::int64_t micro_batch = 1;
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  bool recompute_core_attention = false;  // selective: core_attn
  bool recompute_mlp = false;             // selective: mlp
  bool recompute_norms = false;           // selective: layernorm
  bool flash_attention = true;
};

ActivationSetting activation_setting(const TrainingSpec& training, std::int64_t tp, std::int64_t cp,
                                     bool sequence_parallel);

// Bytes one layer keeps for one micro-batch until its backward.
double layer_activation_bytes(const ModelSpec& model, const ActivationSetting& setting);

// Bytes one layer holds while its backward runs under full recompute: everything, as without
// recompute (the transient on top of the stored layer inputs).
double layer_recompute_transient_bytes(const ModelSpec& model, const ActivationSetting& setting);

// First stage, per micro-batch: token ids (8 bytes each) and the embedding-dropout mask.
double embedding_activation_bytes(const ModelSpec& model, const ActivationSetting& setting);

// Last stage, per micro-batch: final-norm input and output (2 bytes per element, ÷t with SP)
// and the fp32 logits the cross-entropy keeps (4 bytes per element of s·b·V/t), as in
// Megatron's estimator (megatron_formulas.md §3, Formula A).
double output_activation_bytes(const ModelSpec& model, const ActivationSetting& setting);

}  // namespace wallsim::models
