// FLOPs of one training iteration of a decoder (dense, MoE, MLA, MTP).
//
// Model FLOPs follow Megatron-LM's `num_floating_point_operations` (training.py;
// docs/reference/megatron_formulas.md §4). Every weight GEMM costs 2 FLOPs per multiply-add
// and runs three times (forward, data-gradient, weight-gradient), so a weight of a×c costs
// 6·a·c FLOPs per token. For T = B·s tokens (B sequences of s tokens), per layer:
//
//   attention linear  A_lin = 6·[h·(n·d + 2·g·d) + n·d·h]        per token
//   core attention    A_core·s = 6·n·d·s                          per token (QKᵀ and A·V,
//                     halved for the causal mask; 12·n·d·s without the halving)
//   MLP               6·h·φ·f, φ = 3 with SwiGLU, else 2           per token
// and once per token the logits 6·h·V (V padded for tp). Summed:
//
//   F = T·[L·(A_lin + 6hφf) + 6hV] + B·s²·L·6nd
//
// Mixture of experts, MLA and MTP (megatron_formulas.md §4): an MoE layer's FFN costs
// 6h·(φ·f_e·k + φ·f_s) per token (exactly k routed experts plus the shared experts; no router
// GEMM, no capacity padding, no imbalance). MLA's linear part is
//   A_lin = 6·[Q + r_kv·(h + n·(d_qk + d_v) + 1) + h·d_r + n·d_v·h],
//   Q = h·n·(d_qk + d_r), or r_q·(h + n·(d_qk + d_r) + 1) with q-LoRA,
// and its core attention 6·[n·(d_qk + d_r)/2 + n·d_v/2] per token per token of context.
// Each of the M MTP layers counts as a decoder layer typed like the last one, plus
// 6·(3h + 2h²) per token for its norms and 2h→h projection, plus one more logits GEMM:
//   F = T·[6h·(φf·(L_d + M_d) + (φf_e·k + φf_s)·(L_m + M_m)) + A_lin·(L + M)
//          + 6M·(3h + 2h²) + 6hV·(M + 1)] + B·s²·A_core·(L + M)
//
// For GPT shapes (f = 4h, g = n, no SwiGLU) this is 72·B·s·L·h²·(1 + s/(12h) + V/(12hL)); the
// non-causal count gives Korthikanti et al. (2022)'s 72·B·s·L·h²·(1 + s/(6h) + V/(12hL)).
// Only GEMMs count: no norms, softmax, activation functions or loss.
//
// Hardware FLOPs add what recompute runs again: a second forward of every transformer layer
// with full recompute; with selective recompute the forward of the recomputed modules
// (core_attn: the core attention; mlp: the MLP GEMMs; layernorm: no GEMM work).
#pragma once

#include <cstdint>

#include "models/model_spec.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models {

// Forward + backward FLOPs per token of one layer's parts.
double attention_linear_flops_per_token(const ModelSpec& model);
double attention_core_flops_per_token(const ModelSpec& model, std::int64_t seq_len,
                                      bool causal = true);
// A dense layer's MLP (width model.ffn_hidden).
double mlp_flops_per_token(const ModelSpec& model);
// An MoE layer's FFN: k routed experts and the shared experts.
double moe_mlp_flops_per_token(const ModelSpec& model);
double routed_experts_flops_per_token(const ModelSpec& model);
// The FFN of decoder layer `layer` (0-based): MoE or dense as the model places them.
double layer_mlp_flops_per_token(const ModelSpec& model, std::int64_t layer);
double logits_flops_per_token(const ModelSpec& model, std::int64_t tp);
// One MTP layer's norms and 2h→h projection beyond its decoder layer: 6·(3h + 2h²).
double mtp_projection_flops_per_token(const ModelSpec& model);

struct FlopsBreakdown {  // per iteration, forward + backward; decoder and MTP layers together
  double attention_linear = 0;
  double attention_core = 0;
  double mlp = 0;             // every FFN GEMM: dense MLPs, shared and routed experts
  double routed_experts = 0;  // the routed experts' part of mlp
  double logits = 0;          // the output layer, once more per MTP layer
  double mtp_projection = 0;  // MTP norms and projections
  double total() const { return attention_linear + attention_core + mlp + logits + mtp_projection; }
};

FlopsBreakdown model_flops_breakdown(const ModelSpec& model, std::int64_t seq_len,
                                     std::int64_t global_batch, std::int64_t tp,
                                     bool causal = true);

// Megatron's num_floating_point_operations for one global batch.
double model_flops_per_iteration(const ModelSpec& model, std::int64_t seq_len,
                                 std::int64_t global_batch, std::int64_t tp);

// The forward work recompute repeats, per iteration.
double recompute_flops_per_iteration(const ModelSpec& model, const TrainingSpec& training,
                                     std::int64_t tp);

struct IterationFlops {
  double tokens = 0;  // global_batch · seq_len
  FlopsBreakdown model;
  double model_per_iteration = 0;
  double recompute_per_iteration = 0;
  double hardware_per_iteration = 0;
  double model_per_token = 0;
  double hardware_per_token = 0;
  double model_per_gpu = 0;     // per iteration
  double hardware_per_gpu = 0;  // per iteration
};

IterationFlops iteration_flops(const ModelSpec& model, const TrainingSpec& training,
                               std::int64_t tp, std::int64_t num_gpus);

}  // namespace wallsim::models
