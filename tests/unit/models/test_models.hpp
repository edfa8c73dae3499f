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

// Mixtral 8x7B (HF mistralai/Mixtral-8x7B-v0.1 config.json): every layer MoE, 8 experts, top-2.
inline ModelSpec mixtral_8x7b() {
  ModelSpec m = llama3_70b();
  m.name = "mixtral-8x7b";
  m.layers = 32;
  m.hidden = 4096;
  m.ffn_hidden = 14336;
  m.heads = 32;
  m.kv_heads = 8;
  m.head_dim = 128;
  m.vocab = 32000;
  MoeSpec moe;
  moe.experts = 8;
  moe.topk = 2;
  moe.ffn_hidden = 14336;
  m.moe = moe;
  return m;
}

// DeepSeek-V3 (HF deepseek-ai/DeepSeek-V3 config.json): 3 dense layers then 58 MoE layers of
// 256 experts (top-8) + 1 shared expert, MLA, one MTP layer.
inline ModelSpec deepseek_v3() {
  ModelSpec m = llama3_70b();
  m.name = "deepseek-v3";
  m.layers = 61;
  m.hidden = 7168;
  m.ffn_hidden = 18432;
  m.heads = 128;
  m.kv_heads = 128;
  m.head_dim = 192;
  m.vocab = 129280;
  MoeSpec moe;
  moe.experts = 256;
  moe.topk = 8;
  moe.ffn_hidden = 2048;
  moe.shared_ffn_hidden = 2048;
  moe.first_dense_layers = 3;
  moe.score_function = "sigmoid";
  m.moe = moe;
  MlaSpec mla;
  mla.q_lora_rank = 1536;
  mla.kv_lora_rank = 512;
  mla.qk_head_dim = 128;
  mla.qk_rope_head_dim = 64;
  mla.v_head_dim = 128;
  m.mla = mla;
  m.mtp_layers = 1;
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
