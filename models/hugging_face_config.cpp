#include "models/hugging_face_config.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

// Reads the members of one HF config, errors naming the file and key.
class HfReader {
 public:
  explicit HfReader(const JsonNode& node) : node_(node), hf_(node.json()) {}
  bool has(const char* key) const { return hf_.contains(key) && !hf_.at(key).is_null(); }
  JsonNode member(const char* key) const { return JsonNode(hf_.at(key), node_.file(), key); }
  std::int64_t integer(const char* key, std::int64_t min = 1) const {
    if (!has(key)) JsonNode(hf_, node_.file(), "").fail(std::string("missing ") + key);
    return member(key).as_integer(min);
  }
  std::int64_t integer_or(const char* key, std::int64_t fallback, std::int64_t min = 0) const {
    return has(key) ? member(key).as_integer(min) : fallback;
  }

 private:
  const JsonNode& node_;
  const nlohmann::json& hf_;
};

// Routed experts: Mixtral `num_local_experts`, Qwen `num_experts`, DeepSeek `n_routed_experts`.
std::int64_t routed_experts(const HfReader& hf) {
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (hf.has(key)) return hf.integer_or(key, 0);
  }
  return 0;
}

// Which layers are MoE. DeepSeek: layer i ≥ first_k_dense_replace with i % moe_layer_freq == 0;
// Qwen: (i + 1) % decoder_sparse_step == 0 unless i is in mlp_only_layers. The forms wallsim's
// `layer_freq` / `first_dense_layers` express are read; others are rejected.
void moe_layer_pattern(const HfReader& hf, nlohmann::json& moe) {
  const std::int64_t first_dense = hf.integer_or("first_k_dense_replace", 0);
  const std::int64_t freq = hf.integer_or("moe_layer_freq", 1, 1);
  if (first_dense > 0 && freq > 1) {
    hf.member("moe_layer_freq").fail("with first_k_dense_replace > 0 only 1 is supported");
  }
  if (hf.integer_or("decoder_sparse_step", 1, 1) != 1) {
    hf.member("decoder_sparse_step").fail("only 1 (every layer MoE) is supported");
  }
  std::int64_t dense_prefix = first_dense;
  if (hf.has("mlp_only_layers")) {
    const std::vector<JsonNode> layers = hf.member("mlp_only_layers").as_array();
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (layers[i].as_integer(0) != static_cast<std::int64_t>(i)) {
        layers[i].fail("only a prefix 0, 1, ..., K-1 of dense layers is supported");
      }
    }
    dense_prefix = std::max<std::int64_t>(dense_prefix, static_cast<std::int64_t>(layers.size()));
  }
  if (dense_prefix > 0) moe["first_dense_layers"] = dense_prefix;
  if (freq > 1) moe["layer_freq"] = freq;
}

// Shared experts: DeepSeek n_shared_experts × moe_intermediate_size; Qwen2-MoE
// shared_expert_intermediate_size.
std::int64_t shared_width(const HfReader& hf, std::int64_t expert_width) {
  if (hf.has("shared_expert_intermediate_size")) {
    return hf.integer_or("shared_expert_intermediate_size", 0);
  }
  return hf.integer_or("n_shared_experts", 0) * expert_width;
}

void add_moe(const HfReader& hf, nlohmann::json& model) {
  const std::int64_t experts = routed_experts(hf);
  if (experts == 0) return;
  // Mixtral has no moe_intermediate_size: its experts are intermediate_size wide.
  const std::int64_t width = hf.has("moe_intermediate_size") ? hf.integer("moe_intermediate_size")
                                                             : hf.integer("intermediate_size");
  nlohmann::json moe = {
      {"experts", experts}, {"topk", hf.integer("num_experts_per_tok")}, {"ffn_hidden", width}};
  if (const std::int64_t shared = shared_width(hf, width); shared > 0) {
    moe["shared_ffn_hidden"] = shared;
  }
  moe_layer_pattern(hf, moe);
  if (hf.has("scoring_func"))
    moe["score_function"] = hf.member("scoring_func").as_choice({"softmax", "sigmoid"});
  // DeepSeek-V2/V3's group-limited routing (n_group groups, topk_group of them per token);
  // one group, or every group chosen, is no limit.
  const std::int64_t groups = hf.integer_or("n_group", 1, 1);
  const std::int64_t group_topk = hf.integer_or("topk_group", groups, 1);
  if (groups > 1 && group_topk < groups) {
    moe["router_groups"] = groups;
    moe["router_group_topk"] = group_topk;
  }
  model["moe"] = moe;
}

// DeepSeek-V2/V3 multi-head latent attention, recognised by kv_lora_rank.
void add_mla(const HfReader& hf, nlohmann::json& model) {
  if (!hf.has("kv_lora_rank")) return;
  nlohmann::json mla = {{"q_lora_rank", nullptr},
                        {"kv_lora_rank", hf.integer("kv_lora_rank")},
                        {"qk_head_dim", hf.integer("qk_nope_head_dim")},
                        {"qk_rope_head_dim", hf.integer("qk_rope_head_dim", 0)},
                        {"v_head_dim", hf.integer("v_head_dim")}};
  if (hf.has("q_lora_rank")) mla["q_lora_rank"] = hf.integer("q_lora_rank");
  model["mla"] = mla;
  model.erase("head_dim");
}

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
  const HfReader reader(node);
  add_moe(reader, model);
  add_mla(reader, model);
  if (const std::int64_t mtp = reader.integer_or("num_nextn_predict_layers", 0); mtp > 0) {
    model["mtp_layers"] = mtp;
  }
  return model;
}

}  // namespace wallsim::models
