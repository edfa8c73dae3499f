// Model shapes and settings shared by the models/ tests.
#pragma once

#include <string>

#include "models/model_spec.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models::testing {

// A GPT-style shape as Korthikanti et al. and Narayanan et al. use it: f = 4h, no GQA, GeLU,
// LayerNorm, tied embeddings, dropout.
inline ModelSpec gpt_model(std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                           std::int64_t vocab = 51200) {
  ModelSpec m;
  m.name = "gpt";
  m.layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = 4 * hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.head_dim = hidden / heads;
  m.vocab = vocab;
  m.activation = Activation::gelu;
  m.norm = Norm::layernorm;
  m.tied_embeddings = true;
  m.hidden_dropout = 0.1;
  m.attention_dropout = 0.1;
  return m;
}

// Llama 3 70B (Llama 3 Herd of Models, Table 3).
inline ModelSpec llama3_70b() {
  ModelSpec m;
  m.name = "llama3-70b";
  m.layers = 80;
  m.hidden = 8192;
  m.ffn_hidden = 28672;
  m.heads = 64;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.vocab = 128256;
  m.activation = Activation::swiglu;
  m.norm = Norm::rmsnorm;
  m.tied_embeddings = false;
  return m;
}

inline TrainingSpec training(std::int64_t seq_len, std::int64_t micro_batch,
                             std::int64_t global_batch) {
  TrainingSpec t;
  t.seq_len = seq_len;
  t.micro_batch = micro_batch;
  t.global_batch = global_batch;
  return t;
}

inline std::string source_path(const std::string& relative) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/" + relative;
}

}  // namespace wallsim::models::testing
