// Activation bytes a transformer layer keeps for its backward pass, per micro-batch.
//
// Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
// arXiv:2205.05198, §4 and Table 2; docs/reference/mechanics.md §1.2) count, per layer, with
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
//
// MLA (DeepSeek-V2/V3) replaces Q, K, V by their latent shapes: the q latent (2·r_q, plus the
// q-norm output 2·r_q feeding the up-projection), the kv latent and shared RoPE key
// (2·(r_kv + d_r), plus the kv-norm output 2·r_kv) sit with the norm-like replicated tensors;
// Q and K are 2·n·(d_qk + d_r) and V 2·n·d_v per token, TP-sharded, the projection input 2·n·d_v.
//
// Quantized GEMM inputs (training.precision fp8, mxfp8, nvfp4; docs/reference/
// activation_precision.md): Transformer Engine's linear modules save for the weight-gradient GEMM
// the quantized copy of their input, not the bf16 one, at q bytes per element (fp8 1, mxfp8
// 1 + 1/32 for its E8M0 block scales, nvfp4 0.5 + 1/16 for its E4M3 block scales). That applies
// to the QKV, FC1 and FC2 inputs (the norm kernel and the activation kernel write them
// quantized) and to routed experts' FC1 and FC2 inputs; the activation input stays bf16. The
// projection's input is the core attention's output, which a fused attention kernel also keeps
// in bf16 for its own backward: 2 + q bytes per element with a fused kernel, q without. An MoE
// layer's router reads the bf16 norm output, which stays. In bf16 q = 2 and nothing is copied,
// so every term above is unchanged.
//
// An MoE layer (Megatron-Core MoELayer with the all-to-all dispatcher; mechanics.md §4) keeps,
// with T tokens per micro-batch on the rank and T_r = T/t routed per GPU with SP (T without):
//   norm input, router input (the norm output) and dropout mask       as a dense MLP, per T_r
//   router logits (2 bytes) and fp32 scores (4) per expert            6·E per routed token
//   the probabilities of the dispatched rows (fp32)                    4·R, R = k·T_r
//   (R = E·ceil(T_r·k/E·cf) with a capacity factor: every expert padded to its capacity)
//   and, without memory-efficient permutation, the combine's copies of
//   the expert outputs for the probabilities' gradient                 2h·R
//   expert FC1 input (2h), activation input (2·f_e·(2 with SwiGLU)/t_e) and FC2 input
//   (2·f_e/t_e) for etp·R·β rows: the ETP group all-gathers the tokens its experts receive, and
//   β = ep·(largest load share of one EP rank) is the busiest EP rank (1 when uniform or with a
//   capacity factor)
//   shared experts as a dense MLP of width f_s on all T tokens, ÷t
// Megatron-Core's experts multiply the probabilities into the activation output before FC2
// (activation_func_with_probs), whose backward needs only the FC1 output it already keeps: the
// memory-efficient permutation of the MCore MoE report (arXiv:2603.07685 §4.1), on by default.
// Recomputing `mlp` drops the activation and FC2 inputs of routed and shared experts,
// `moe_act` only the routed experts' FC2 input (the activation output, recomputed from the
// kept FC1 output before FC2's backward). With
// uniform routing, SP and t_e = t this is the dense MLP with f replaced by k·f_e (÷t) plus the
// router, combine and expert FC1-input terms.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
  bool recompute_moe = false;             // selective: moe (MoE FFN keeps its input only)
  bool recompute_moe_act = false;         // selective: moe_act (routed experts' FC2 input)
  bool recompute_mla_up_proj = false;     // selective: mla_up_proj (Q, K, V not kept)
  bool flash_attention = true;
  // Ranks of context parallelism's all-to-all when CP runs as all-to-all alone (cp_comm_type
  // a2a), else 1. Transformer Engine from 2.8 on saves the attention output before the output
  // all-to-all for its own backward, beside the projection's copy of it after the all-to-all.
  std::int64_t cp_a2a = 1;
  double logits_kept_bytes = 4;  // per logit element the cross-entropy keeps (cross_entropy.hpp)
  // Bytes per element of a saved weight-gradient GEMM input: 2 (bf16, the tensor itself), or
  // its quantized copy's bytes (saved_gemm_input_bytes below).
  double gemm_input_bytes = 2;
  bool quantized_gemm_inputs = false;
  std::int64_t etp = 1;  // expert tensor parallelism (MoE layers)
  std::int64_t ep = 1;   // expert parallelism (MoE layers)
  // The combine keeps each dispatched row's expert output for the probabilities' gradient
  // (training.moe_memory_efficient_permutation false).
  bool keep_expert_outputs = false;
};

ActivationSetting activation_setting(const TrainingSpec& training, std::int64_t tp, std::int64_t cp,
                                     bool sequence_parallel);

// Bytes per element of the copy Transformer Engine saves of a GEMM input: 2 without
// quantization, 1 for fp8, 1 + 1/32 for mxfp8, 0.5 + 1/16 for nvfp4.
double saved_gemm_input_bytes(Quantization quantization);

// Bytes one dense layer keeps for one micro-batch until its backward (every layer of a dense
// model; the dense layers of an MoE model).
double layer_activation_bytes(const ModelSpec& model, const ActivationSetting& setting);

// The same for decoder layer `layer` (0-based): the MoE FFN where model.is_moe_layer(layer).
double layer_activation_bytes(const ModelSpec& model, const ActivationSetting& setting,
                              std::int64_t layer);

// Bytes one layer holds while its backward runs under full recompute: everything, as without
// recompute (the transient on top of the stored layer inputs). Dense layer / layer `layer`.
double layer_recompute_transient_bytes(const ModelSpec& model, const ActivationSetting& setting);
double layer_recompute_transient_bytes(const ModelSpec& model, const ActivationSetting& setting,
                                       std::int64_t layer);

// Of layer `layer`'s bytes, what the listed modules save (Megatron-Core's fine-grained activation
// offloading: each module's saved tensors go to host memory; training.offload.activations as a
// list), per micro-batch, with the same terms as above:
//   attn_norm   the input norm's input, 2h per token (÷t with SP)
//   qkv_linear  the QKV (MLA: down-projection) input, the norm output (none under `layernorm`
//               recompute)
//   core_attn   Q, K and V (none for MLA under `mla_up_proj` recompute), ÷t
//   attn_proj   the projection's input, the core attention's output, ÷t
//   mlp_norm    the pre-MLP norm's input, 2h per token
//   expert_fc1  the routed experts' FC1 inputs (MoE layers; none under `moe` recompute)
//   moe_act     the routed experts' activation inputs, their FC1 outputs (MoE layers; none under
//               `moe` or `mlp` recompute)
// Under full recompute a layer keeps only its input: nothing of these.
double layer_offload_bytes(const ModelSpec& model, const ActivationSetting& setting,
                           std::int64_t layer, const std::vector<std::string>& modules);

// The hidden state entering a decoder layer, per micro-batch: 2h bytes (bf16) per token of the
// rank's sequence shard, ÷t with sequence parallelism.
double layer_input_bytes(const ModelSpec& model, const ActivationSetting& setting);

// What the attention half of layer `layer` (attn_norm, qkv_linear, core_attn and attn_proj of
// layer_offload_bytes) saves for one micro-batch when nothing is recomputed.
double attention_part_bytes(const ModelSpec& model, const ActivationSetting& setting,
                            std::int64_t layer);

// First stage, per micro-batch: token ids (8 bytes each) and the embedding-dropout mask.
double embedding_activation_bytes(const ModelSpec& model, const ActivationSetting& setting);

// Last stage, per micro-batch: final-norm input and output (2 bytes per element, ÷t with SP)
// and the logits the cross-entropy keeps per element of s·b·V/t: the fp32 softmax (4 bytes, as
// in Megatron's estimator, megatron_formulas.md §3, Formula A) or, with Transformer Engine's
// fused cross-entropy, the bf16 logits (2).
double output_activation_bytes(const ModelSpec& model, const ActivationSetting& setting);

}  // namespace wallsim::models
