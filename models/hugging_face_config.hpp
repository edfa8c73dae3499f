// Reading a Hugging Face `config.json` (Llama, Mixtral, Qwen3-MoE, DeepSeek-V3) as a wallsim model.
//
// The HF object is translated into wallsim's own model JSON before `--set` overrides apply, so
// `--set model.layers=40` works whatever format the model file had. Keys read:
// num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
// num_key_value_heads, head_dim, vocab_size, tie_word_embeddings, hidden_act, rms_norm_eps /
// layer_norm_eps, attention_dropout, hidden_dropout. Mixture of experts: num_local_experts
// (Mixtral; experts intermediate_size wide) / num_experts (Qwen) / n_routed_experts (DeepSeek),
// num_experts_per_tok, moe_intermediate_size, shared_expert_intermediate_size or
// n_shared_experts × moe_intermediate_size, first_k_dense_replace, moe_layer_freq,
// decoder_sparse_step (1 only), mlp_only_layers (a prefix only), scoring_func. MLA: q_lora_rank,
// kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim. MTP: num_nextn_predict_layers.
// Other HF keys (rope settings, dtype, router aux-loss settings, ...) do not change FLOPs or
// memory and are ignored.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace wallsim {

class JsonNode;

namespace models {

// True when `value` is an object with `num_hidden_layers` (the HF key for the layer count).
bool is_hugging_face_config(const nlohmann::json& value);

// Translates an HF config into wallsim's model format. Errors name the HF file and key.
nlohmann::json hugging_face_to_model_json(const JsonNode& node);

}  // namespace models
}  // namespace wallsim
