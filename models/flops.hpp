// FLOPs of one training iteration of a dense decoder.
//
// Model FLOPs follow Megatron-LM's `num_floating_point_operations` (training.py;
// shared/reference/megatron_formulas.md §4). Every weight GEMM costs 2 FLOPs per multiply-add
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
double mlp_flops_per_token(const ModelSpec& model);
double logits_flops_per_token(const ModelSpec& model, std::int64_t tp);

struct FlopsBreakdown {  // per iteration, forward + backward
  double attention_linear = 0;
  double attention_core = 0;
  double mlp = 0;
  double logits = 0;
  double total() const { return attention_linear + attention_core + mlp + logits; }
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
