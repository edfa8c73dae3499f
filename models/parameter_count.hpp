// Parameter counts of a dense decoder, as Megatron-LM's estimator counts them
// (shared/reference/megatron_formulas.md §1; `compute_weight_and_optimizer_memory`).
//
//   attention  P_att  = 2·h·(n·d)·(1 + g/n)     Q, O: h·n·d each; K, V: h·g·d each
//   MLP        P_mlp  = 2·h·f·γ                  γ = 3/2 with SwiGLU (three matrices), else 1
//   norms      P_norm = 2·ν·h per layer          ν = 1 for RMSNorm, 2 for LayerNorm (weight + bias)
//   embedding  P_emb  = V·h                      V padded (model_spec.hpp: padded_vocab)
//   final norm ν·h
// Linear biases and learned position embeddings are not counted (Megatron's estimator omits
// them; megatron_formulas.md §5.2). All counts are exact integers held in doubles so they mix
// with byte arithmetic; they stay below 2^53.
#pragma once

#include <cstdint>

#include "models/model_spec.hpp"

namespace wallsim::models {

// ν: parameters per norm element.
double norm_params_per_element(Norm norm);

// Per transformer layer, split by how tensor parallelism shards them.
struct LayerParameters {
  double attention = 0;  // TP-sharded
  double mlp = 0;        // TP-sharded
  double norms = 0;      // replicated across TP
  double tp_sharded() const { return attention + mlp; }
  double total() const { return attention + mlp + norms; }
};

LayerParameters layer_parameters(const ModelSpec& model);

// V·h with V padded for `tp`.
double embedding_parameters(const ModelSpec& model, std::int64_t tp);

// Whole model: L layers + final norm + input embedding (+ output layer when untied).
double total_parameters(const ModelSpec& model, std::int64_t tp);

}  // namespace wallsim::models
