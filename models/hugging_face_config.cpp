#include "models/hugging_face_config.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

// HF keys that announce an architecture wallsim does not model yet.
constexpr const char* kUnsupportedKeys[] = {"num_local_experts", "n_routed_experts",
                                            "num_experts",       "kv_lora_rank",
                                            "q_lora_rank",       "num_nextn_predict_layers"};

std::string activation_from_hf(const JsonNode& node) {
  const std::string act =
      node.as_choice({"silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu2"});
  if (act == "silu" || act == "swish") return "swiglu";  // Llama MLP: gated SiLU
  if (act == "relu2") return "squared_relu";
  return "gelu";
}

}  // namespace

bool is_hugging_face_config(const nlohmann::json& value) {
  return value.is_object() && value.contains("num_hidden_layers");
}

nlohmann::json hugging_face_to_model_json(const JsonNode& node) {
  const nlohmann::json& hf = node.json();
  for (const char* key : kUnsupportedKeys) {
    if (hf.contains(key) && !hf.at(key).is_null() && hf.at(key) != 0) {
      JsonNode(hf.at(key), node.file(), key)
          .fail("not supported yet: wallsim models dense decoders only for now");
    }
  }
  auto member = [&](const char* key) { return JsonNode(hf.at(key), node.file(), key); };
  auto required = [&](const char* key) {
    if (!hf.contains(key)) JsonNode(hf, node.file(), "").fail(std::string("missing ") + key);
    return member(key).as_integer(1);
  };
  nlohmann::json model = {{"layers", required("num_hidden_layers")},
                          {"hidden", required("hidden_size")},
                          {"ffn_hidden", required("intermediate_size")},
                          {"heads", required("num_attention_heads")},
                          {"vocab", required("vocab_size")}};
  if (hf.contains("num_key_value_heads"))
    model["kv_heads"] = member("num_key_value_heads").as_integer(1);
  if (hf.contains("head_dim") && !hf.at("head_dim").is_null()) {
    model["head_dim"] = member("head_dim").as_integer(1);
  }
  model["tied_embeddings"] =
      hf.contains("tie_word_embeddings") ? member("tie_word_embeddings").as_bool() : false;
  model["activation"] =
      hf.contains("hidden_act") ? activation_from_hf(member("hidden_act")) : "swiglu";
  model["norm"] =
      hf.contains("layer_norm_eps") && !hf.contains("rms_norm_eps") ? "layernorm" : "rmsnorm";
  if (hf.contains("attention_dropout"))
    model["attention_dropout"] = member("attention_dropout").as_number(0, 0.999);
  if (hf.contains("hidden_dropout"))
    model["hidden_dropout"] = member("hidden_dropout").as_number(0, 0.999);
  if (hf.contains("_name_or_path") && hf.at("_name_or_path").is_string()) {
    model["name"] = hf.at("_name_or_path");
  }
  model["source"] = "Hugging Face config " + node.file();
  return model;
}

}  // namespace wallsim::models
