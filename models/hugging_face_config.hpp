// Reading a Hugging Face `config.json` (Llama-style keys) as a wallsim model.
//
// The HF object is translated into wallsim's own model JSON before `--set` overrides apply, so
// `--set model.layers=40` works whatever format the model file had. Keys read:
// num_hidden_layers, hidden_size, intermediate_size, num_attention_heads,
// num_key_value_heads, head_dim, vocab_size, tie_word_embeddings, hidden_act, rms_norm_eps /
// layer_norm_eps, attention_dropout, hidden_dropout. Other HF keys (rope settings, dtype, ...)
// do not change FLOPs or memory and are ignored; MoE/MLA keys are rejected as not supported yet.
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
