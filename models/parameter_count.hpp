// Parameter counts of a decoder, as Megatron-LM's estimator counts them
// (docs/reference/megatron_formulas.md §1; `compute_weight_and_optimizer_memory`).
//
//   attention  P_att  = 2·h·(n·d)·(1 + g/n)     Q, O: h·n·d each; K, V: h·g·d each
//   MLA        Q: h·n·(d_qk + d_r), or with q-LoRA r_q·(h + n·(d_qk + d_r) + ν)
//              KV: r_kv·(h + n·(d_qk + d_v) + ν) + h·d_r;  output: n·d_v·h
//   MLP        P_mlp  = 2·h·f·γ                  γ = 3/2 with SwiGLU (three matrices), else 1
//   MoE layer  shared experts 2·h·f_s·γ, routed experts 2·h·f_e·γ·E (active: k instead of E),
//              router h·E (no bias)
//   norms      P_norm = 2·ν·h per layer          ν = 1 for RMSNorm, 2 for LayerNorm (weight + bias)
//   embedding  P_emb  = V·h                      V padded (model_spec.hpp: padded_vocab)
//   final norm ν·h
//   MTP        each MTP layer counts as one decoder layer typed like the last (its own norms,
//              2h→h projection and shared embedding are not counted, as in Megatron)
// Linear biases and learned position embeddings are not counted (Megatron's estimator omits
// them; megatron_formulas.md §5.2). All counts are exact integers held in doubles so they mix
// with byte arithmetic; they stay below 2^53.
#pragma once

#include <cstdint>

#include "models/model_spec.hpp"

namespace wallsim::models {

// ν: parameters per norm element.
double norm_params_per_element(Norm norm);

// Per transformer layer, split by how the layer is sharded (megatron_formulas.md §2).
struct LayerParameters {
  double attention = 0;       // TP-sharded (MLA: including its latent norms, as Megatron)
  double mlp = 0;             // TP-sharded: the dense MLP, or an MoE layer's shared experts
  double norms = 0;           // replicated across TP
  double router = 0;          // replicated across TP; MoE layers only
  double experts = 0;         // routed experts, sharded over etp·ep; MoE layers only
  double active_experts = 0;  // the k routed experts one token uses
  double tp_sharded() const { return attention + mlp; }
  double replicated() const { return norms + router; }
  double total() const { return attention + mlp + norms + router + experts; }
  double active() const { return attention + mlp + norms + router + active_experts; }
};

// P_att: the attention block's weights (MHA/GQA or MLA).
double attention_parameters(const ModelSpec& model);

// A dense layer of `model` (every layer of a dense model).
LayerParameters layer_parameters(const ModelSpec& model);

// Decoder layer `layer` (0-based): an MoE layer where model.is_moe_layer(layer), else dense.
LayerParameters layer_parameters(const ModelSpec& model, std::int64_t layer);

// One MTP layer: a decoder layer typed like the last one.
LayerParameters mtp_layer_parameters(const ModelSpec& model);

// V·h with V padded for `tp`.
double embedding_parameters(const ModelSpec& model, std::int64_t tp);

// N_total: L layers + MTP layers + final norm + input embedding (+ output layer when untied).
double total_parameters(const ModelSpec& model, std::int64_t tp);

// N_active: as N_total with k routed experts per MoE layer instead of E (= N_total when dense).
double active_parameters(const ModelSpec& model, std::int64_t tp);

}  // namespace wallsim::models
