#include "models/hugging_face_config.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/model_spec.hpp"
#include "models/parameter_count.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "test_models.hpp"

using Catch::Matchers::Contains;
using nlohmann::json;
using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

ModelSpec from_hf(const json& hf) {
  const json model = hugging_face_to_model_json(JsonNode(hf, "config.json", ""));
  return parse_model_spec(JsonNode(model, "config.json", ""));
}

ModelSpec shipped(const std::string& name) {
  const json value = load_json_file(source_path("configs/models/" + name + ".json"));
  return parse_model_spec(JsonNode(value, name, ""));
}

// The keys of each public config.json that matter here (as published on the Hugging Face hub).
const json kMixtral = {{"architectures", {"MixtralForCausalLM"}},
                       {"hidden_act", "silu"},
                       {"hidden_size", 4096},
                       {"intermediate_size", 14336},
                       {"num_attention_heads", 32},
                       {"num_experts_per_tok", 2},
                       {"num_hidden_layers", 32},
                       {"num_key_value_heads", 8},
                       {"num_local_experts", 8},
                       {"rms_norm_eps", 1e-5},
                       {"tie_word_embeddings", false},
                       {"vocab_size", 32000}};

const json kQwen3Moe = {{"architectures", {"Qwen3MoeForCausalLM"}},
                        {"decoder_sparse_step", 1},
                        {"head_dim", 128},
                        {"hidden_act", "silu"},
                        {"hidden_size", 2048},
                        {"intermediate_size", 6144},
                        {"mlp_only_layers", json::array()},
                        {"moe_intermediate_size", 768},
                        {"num_attention_heads", 32},
                        {"num_experts", 128},
                        {"num_experts_per_tok", 8},
                        {"num_hidden_layers", 48},
                        {"num_key_value_heads", 4},
                        {"rms_norm_eps", 1e-6},
                        {"tie_word_embeddings", false},
                        {"vocab_size", 151936}};

const json kDeepSeekV3 = {{"architectures", {"DeepseekV3ForCausalLM"}},
                          {"first_k_dense_replace", 3},
                          {"hidden_act", "silu"},
                          {"hidden_size", 7168},
                          {"intermediate_size", 18432},
                          {"kv_lora_rank", 512},
                          {"moe_intermediate_size", 2048},
                          {"moe_layer_freq", 1},
                          {"n_routed_experts", 256},
                          {"n_shared_experts", 1},
                          {"num_attention_heads", 128},
                          {"num_experts_per_tok", 8},
                          {"num_hidden_layers", 61},
                          {"num_key_value_heads", 128},
                          {"num_nextn_predict_layers", 1},
                          {"q_lora_rank", 1536},
                          {"qk_nope_head_dim", 128},
                          {"qk_rope_head_dim", 64},
                          {"rms_norm_eps", 1e-6},
                          {"scoring_func", "sigmoid"},
                          {"tie_word_embeddings", false},
                          {"v_head_dim", 128},
                          {"vocab_size", 129280}};

}  // namespace

TEST_CASE("Mixtral's config.json: experts as wide as intermediate_size", "[models][hf][moe]") {
  const ModelSpec m = from_hf(kMixtral);
  REQUIRE(m.moe);
  CHECK(m.moe->experts == 8);
  CHECK(m.moe->topk == 2);
  CHECK(m.moe->ffn_hidden == 14336);
  CHECK(m.moe_layer_count() == 32);
  CHECK(total_parameters(m, 1) == total_parameters(shipped("mixtral-8x7b"), 1));
}

TEST_CASE("Qwen3-MoE's config.json reads as the shipped model", "[models][hf][moe]") {
  const ModelSpec m = from_hf(kQwen3Moe);
  const ModelSpec ours = shipped("qwen3-30b-a3b");
  REQUIRE(m.moe);
  CHECK(m.moe->ffn_hidden == 768);
  CHECK(m.head_dim == 128);
  CHECK(total_parameters(m, 1) == total_parameters(ours, 1));
  CHECK(active_parameters(m, 1) == active_parameters(ours, 1));
  // mlp_only_layers [0, 1] is a dense prefix; a sparse step other than 1 is not expressible.
  json prefix = kQwen3Moe;
  prefix["mlp_only_layers"] = {0, 1};
  CHECK(from_hf(prefix).moe->first_dense_layers == 2);
  json holes = kQwen3Moe;
  holes["mlp_only_layers"] = {3};
  CHECK_THROWS_WITH(from_hf(holes), Contains("mlp_only_layers[0] = 3") && Contains("prefix"));
  json sparse = kQwen3Moe;
  sparse["decoder_sparse_step"] = 2;
  CHECK_THROWS_WITH(from_hf(sparse), Contains("decoder_sparse_step = 2"));
}

TEST_CASE("DeepSeek-V3's config.json: MoE, MLA and MTP as the shipped model", "[models][hf][moe]") {
  const ModelSpec m = from_hf(kDeepSeekV3);
  REQUIRE(m.moe);
  REQUIRE(m.mla);
  CHECK(m.moe->shared_ffn_hidden == 2048);  // n_shared_experts 1 × moe_intermediate_size 2048
  CHECK(m.moe->first_dense_layers == 3);
  CHECK(m.moe->score_function == "sigmoid");
  CHECK(m.moe->router_groups == 0);  // the fixture has no n_group
  CHECK(m.mla->q_lora_rank == 1536);
  CHECK(m.mla->qk_head_dim == 128);
  CHECK(m.mtp_layers == 1);
  CHECK(total_parameters(m, 1) == total_parameters(shipped("deepseek-v3"), 1));
  json no_q_lora = kDeepSeekV3;
  no_q_lora["q_lora_rank"] = nullptr;  // DeepSeek-V2-Lite style
  CHECK_FALSE(from_hf(no_q_lora).mla->q_lora_rank);
  json grouped = kDeepSeekV3;  // DeepSeek-V3's n_group 8, topk_group 4: 4 of 8 groups per token
  grouped["n_group"] = 8;
  grouped["topk_group"] = 4;
  CHECK(from_hf(grouped).moe->router_groups == 8);
  CHECK(from_hf(grouped).moe->router_group_topk == 4);
  CHECK(from_hf(grouped).moe->router_group_topk == shipped("deepseek-v3").moe->router_group_topk);
  grouped["topk_group"] = 8;  // every group chosen: no limit
  CHECK(from_hf(grouped).moe->router_groups == 0);
  json freq = kDeepSeekV3;
  freq["moe_layer_freq"] = 2;
  CHECK_THROWS_WITH(from_hf(freq), Contains("moe_layer_freq = 2"));
}

TEST_CASE("a dense config.json stays dense", "[models][hf]") {
  json llama = kMixtral;
  llama.erase("num_local_experts");
  llama.erase("num_experts_per_tok");
  const ModelSpec m = from_hf(llama);
  CHECK_FALSE(m.moe);
  CHECK_FALSE(m.mla);
  CHECK(m.mtp_layers == 0);
}
