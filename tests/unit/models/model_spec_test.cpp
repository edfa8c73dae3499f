#include "models/model_spec.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/hugging_face_config.hpp"
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

ModelSpec parse(const json& value) {
  return parse_model_spec(JsonNode(value, "m.json", ""));
}

ModelSpec shipped(const std::string& name) {
  const json value = load_json_file(source_path("configs/models/" + name + ".json"));
  return parse(value);
}

}  // namespace

TEST_CASE("defaults: kv_heads = heads, head_dim = hidden/heads, Megatron's FFN width",
          "[models][spec]") {
  const ModelSpec gpt = parse({{"layers", 2}, {"hidden", 768}, {"heads", 12}, {"vocab", 50257}});
  CHECK(gpt.kv_heads == 12);
  CHECK(gpt.head_dim == 64);
  CHECK(gpt.ffn_hidden == 3072);  // 4h
  CHECK(gpt.tied_embeddings);
  // SwiGLU: floor(8h/3/64)·64 (arguments.py) = floor(2730.67/64)·64 = 2688 for h = 1024.
  const ModelSpec gated = parse(
      {{"layers", 2}, {"hidden", 1024}, {"heads", 8}, {"vocab", 100}, {"activation", "swiglu"}});
  CHECK(gated.ffn_hidden == 2688);
}

TEST_CASE("bad model files are rejected naming file, key and what is allowed", "[models][spec]") {
  const json base = {{"layers", 2}, {"hidden", 768}, {"heads", 12}, {"vocab", 100}};
  auto with = [&](const char* key, json value) {
    json copy = base;
    copy[key] = std::move(value);
    return copy;
  };
  CHECK_THROWS_WITH(parse(with("activation", "relu")),
                    Contains("m.json: activation = \"relu\"") && Contains("swiglu"));
  CHECK_THROWS_WITH(parse(with("kv_heads", 5)), Contains("kv_heads = 5") && Contains("divide"));
  CHECK_THROWS_WITH(parse(with("heads", 7)), Contains("heads = 7") && Contains("head_dim"));
  CHECK_THROWS_WITH(parse(with("layerz", 3)), Contains("layerz") && Contains("unknown key"));
  json missing = base;
  missing.erase("vocab");
  CHECK_THROWS_WITH(parse(missing), Contains("vocab") && Contains("required"));
}

TEST_CASE("the vocabulary is padded to a multiple of 128·tp", "[models][spec]") {
  CHECK(padded_vocab(50257, 1) == 50304);
  CHECK(padded_vocab(50257, 8) == 51200);
  CHECK(padded_vocab(128256, 8) == 129024);  // 125.25·1024 -> 126·1024
  CHECK(padded_vocab(128256, 1) == 128256);
  CHECK(padded_vocab(32000, 3) == 32256);
}

TEST_CASE("a Hugging Face config.json reads as the same model", "[models][spec]") {
  const json hf = load_json_file(source_path("configs/models/llama3-8b-hf-config.json"));
  const ModelSpec from_hf = parse(hugging_face_to_model_json(JsonNode(hf, "config.json", "")));
  const ModelSpec ours = shipped("llama3-8b");
  CHECK(from_hf.layers == ours.layers);
  CHECK(from_hf.hidden == ours.hidden);
  CHECK(from_hf.ffn_hidden == ours.ffn_hidden);
  CHECK(from_hf.kv_heads == ours.kv_heads);
  CHECK(from_hf.head_dim == ours.head_dim);
  CHECK(from_hf.activation == Activation::swiglu);
  CHECK(from_hf.norm == Norm::rmsnorm);
  CHECK_FALSE(from_hf.tied_embeddings);
  CHECK(total_parameters(from_hf, 1) == total_parameters(ours, 1));
  json moe = hf;
  moe["num_local_experts"] = 8;  // Mixtral's key, without its top-k
  CHECK_THROWS_WITH(hugging_face_to_model_json(JsonNode(moe, "config.json", "")),
                    Contains("config.json") && Contains("missing num_experts_per_tok"));
}

TEST_CASE("parameter counts of the shipped Llama and Nemotron models match their published sizes",
          "[models][spec]") {
  // Exact totals of the Hugging Face checkpoints (model.safetensors.index.json "total_size" / 2
  // bytes for bf16); Llama has no biases, so Megatron's count is exact.
  CHECK(total_parameters(shipped("llama2-7b"), 1) == 6738415616.0);
  CHECK(total_parameters(shipped("llama2-13b"), 1) == 13015864320.0);
  CHECK(total_parameters(shipped("llama2-70b"), 1) == 68976648192.0);
  CHECK(total_parameters(shipped("llama3-8b"), 1) == 8030261248.0);
  CHECK(total_parameters(shipped("llama3-70b"), 1) == 70553706496.0);
  // Llama 3.1 405B: Meta names it by its rounded size.
  CHECK(total_parameters(shipped("llama3-405b"), 1) / 1e9 == Approx(405.0).margin(1.0));
  // Nemotron-4 340B report: 9.4B embedding + 331.6B non-embedding parameters.
  const ModelSpec nemotron = shipped("nemotron4-340b");
  const double embedding = 2 * embedding_parameters(nemotron, 1);
  CHECK(embedding / 1e9 == Approx(9.4).margin(0.05));
  CHECK((total_parameters(nemotron, 1) - embedding) / 1e9 == Approx(331.6).margin(0.05));
}

TEST_CASE("GPT models match Narayanan et al.'s sizes once biases and positions are added back",
          "[models][spec]") {
  // Narayanan Eq. 2 counts 9h per layer of linear biases and s·h learned position embeddings
  // (s = 2048) that Megatron's estimator omits; the published sizes are rounded to 0.1 B.
  const std::pair<const char*, double> published[] = {
      {"gpt-1.7b", 1.7},     {"gpt-3.6b", 3.6},
      {"gpt-7.5b", 7.5},     {"gpt-18.4b", 18.4},
      {"gpt-39.1b", 39.1},   {"gpt-76.1b", 76.1},
      {"gpt-145.6b", 145.6}, {"gpt-310.1b", 310.1},
      {"gpt-529.6b", 529.6}, {"gpt-1t", 1008.0},
      {"gpt3-175b", 174.6},  {"gpt-22b", 22.0}};  // 22B: Korthikanti Table 3 gives the size to 1 B
  for (const auto& [name, billions] : published) {
    const ModelSpec m = shipped(name);
    const double h = static_cast<double>(m.hidden);
    const double with_biases = total_parameters(m, 1) + 9 * h * static_cast<double>(m.layers) +
                               2048 * h - 2 * h /* Eq. 2 has no final norm */;
    INFO(name);
    CHECK(with_biases / 1e9 ==
          Approx(billions).margin(std::string(name) == "gpt-22b" ? 0.5 : 0.05));
  }
}

TEST_CASE("moe, mla and mtp_layers parse with Megatron's defaults", "[models][spec][moe]") {
  const json base = {{"layers", 4},   {"hidden", 64},           {"heads", 4},
                     {"vocab", 1000}, {"activation", "swiglu"}, {"ffn_hidden", 96}};
  json value = base;
  value["moe"] = {{"experts", 8}, {"topk", 2}};
  const ModelSpec moe = parse(value);
  REQUIRE(moe.moe);
  CHECK(moe.moe->ffn_hidden == 96);  // f_e defaults to f (arguments.py)
  CHECK(moe.moe->shared_ffn_hidden == 0);
  CHECK(moe.moe->score_function == "softmax");
  CHECK_FALSE(moe.moe->capacity_factor);
  CHECK(moe.moe->imbalance.kind == RouterImbalance::Kind::uniform);
  CHECK(moe.moe_layer_count() == 4);
  CHECK(moe.mtp_layers == 0);
  CHECK_FALSE(moe.mla);

  value["moe"] = {{"experts", 8},
                  {"topk", 2},
                  {"first_dense_layers", 1},
                  {"capacity_factor", 1.25},
                  {"router_imbalance", {{"skew", 1.0}}}};
  value["mla"] = {{"q_lora_rank", nullptr},
                  {"kv_lora_rank", 32},
                  {"qk_head_dim", 16},
                  {"qk_rope_head_dim", 8},
                  {"v_head_dim", 16}};
  value["mtp_layers"] = 1;
  const ModelSpec full = parse(value);
  CHECK(full.moe->capacity_factor == 1.25);
  CHECK(full.moe->imbalance.skew == 1.0);
  CHECK_FALSE(full.moe->is_moe_layer(0));
  CHECK(full.moe_layer_count() == 3);
  CHECK_FALSE(full.mla->q_lora_rank);
  CHECK(full.head_dim == 24);  // MLA: d_qk + d_r per query/key head
  CHECK(full.mtp_layers == 1);
  CHECK(full.mtp_is_moe());  // typed like the last layer (3), which is MoE
}

TEST_CASE("every layer_freq-th layer is MoE", "[models][spec][moe]") {
  MoeSpec moe;
  moe.layer_freq = 2;
  CHECK(moe.is_moe_layer(0));
  CHECK_FALSE(moe.is_moe_layer(1));
  CHECK(moe.is_moe_layer(2));
}

TEST_CASE("bad moe and mla sections name the JSON path and what is allowed",
          "[models][spec][moe]") {
  const json base = {{"layers", 4}, {"hidden", 64}, {"heads", 4}, {"vocab", 1000}};
  auto with_moe = [&](json moe) {
    json copy = base;
    copy["moe"] = std::move(moe);
    return copy;
  };
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 8}, {"topk", 9}})),
                    Contains("m.json: moe.topk = 9: must be at most moe.experts (8)"));
  CHECK_THROWS_WITH(parse(with_moe({{"topk", 2}})),
                    Contains("moe.experts") && Contains("required"));
  CHECK_THROWS_WITH(
      parse(with_moe({{"experts", 8}, {"topk", 2}, {"layer_freq", 2}, {"first_dense_layers", 1}})),
      Contains("moe.first_dense_layers") && Contains("not both"));
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 8}, {"topk", 2}, {"first_dense_layers", 4}})),
                    Contains("moe.first_dense_layers = 4"));
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 8}, {"topk", 2}, {"capacity_factor", 0}})),
                    Contains("moe.capacity_factor = 0"));
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 8}, {"topk", 2}, {"router_groups", 4}})),
                    Contains("moe.router_groups") && Contains("together"));
  CHECK_THROWS_WITH(
      parse(
          with_moe({{"experts", 8}, {"topk", 2}, {"router_groups", 3}, {"router_group_topk", 1}})),
      Contains("moe.router_groups = 3: must divide moe.experts (8)"));
  CHECK_THROWS_WITH(
      parse(
          with_moe({{"experts", 8}, {"topk", 2}, {"router_groups", 4}, {"router_group_topk", 5}})),
      Contains("moe.router_group_topk = 5: must be at most router_groups (4)"));
  // 1 of 4 groups holds 2 experts, fewer than topk 3.
  CHECK_THROWS_WITH(
      parse(
          with_moe({{"experts", 8}, {"topk", 3}, {"router_groups", 4}, {"router_group_topk", 1}})),
      Contains("moe.router_group_topk = 1: its groups hold 2 experts, fewer than topk (3)"));
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 8}, {"topk", 2}, {"score_function", "relu"}})),
                    Contains("moe.score_function") && Contains("sigmoid"));
  CHECK_THROWS_WITH(
      parse(with_moe({{"experts", 2}, {"topk", 1}, {"router_imbalance", {{"loads", {1, 2, 3}}}}})),
      Contains("moe.router_imbalance.loads") && Contains("one load per expert"));
  CHECK_THROWS_WITH(
      parse(with_moe({{"experts", 2}, {"topk", 1}, {"router_imbalance", {{"loads", {1, 0}}}}})),
      Contains("moe.router_imbalance.loads[1] = 0"));
  CHECK_THROWS_WITH(
      parse(with_moe({{"experts", 2}, {"topk", 1}, {"router_imbalance", {{"skew", -1}}}})),
      Contains("moe.router_imbalance.skew = -1"));
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 2}, {"topk", 1}, {"router_imbalance", "zipf"}})),
                    Contains("moe.router_imbalance = \"zipf\"") && Contains("uniform"));
  CHECK_THROWS_WITH(parse(with_moe({{"experts", 2}, {"topk", 1}, {"experts_per_rank", 1}})),
                    Contains("moe.experts_per_rank") && Contains("unknown key"));
  json mla = base;
  mla["mla"] = {
      {"kv_lora_rank", 32}, {"qk_head_dim", 16}, {"qk_rope_head_dim", 8}, {"v_head_dim", 16}};
  mla["kv_heads"] = 2;
  CHECK_THROWS_WITH(parse(mla), Contains("kv_heads = 2") && Contains("mla"));
  json mtp = base;
  mtp["mtp_layers"] = -1;
  CHECK_THROWS_WITH(parse(mtp), Contains("mtp_layers = -1"));
}

TEST_CASE("router imbalance: each expert's share of the routed tokens", "[models][spec][moe]") {
  RouterImbalance uniform;
  CHECK(expert_load_shares(uniform, 4) == std::vector<double>{0.25, 0.25, 0.25, 0.25});
  // skew 1: loads 1, 1/2, 1/3, 1/4 sum to 25/12, so shares 12/25, 6/25, 4/25, 3/25.
  RouterImbalance skew;
  skew.kind = RouterImbalance::Kind::skew;
  skew.skew = 1.0;
  const std::vector<double> shares = expert_load_shares(skew, 4);
  CHECK(shares[0] == Approx(12.0 / 25));
  CHECK(shares[3] == Approx(3.0 / 25));
  RouterImbalance loads;
  loads.kind = RouterImbalance::Kind::loads;
  loads.loads = {3, 1};
  CHECK(expert_load_shares(loads, 2) == std::vector<double>{0.75, 0.25});
}

TEST_CASE("shipped MoE models: Megatron's total and active parameters match the published sizes",
          "[models][spec][moe]") {
  struct Case {
    const char* file;
    double total_b, active_b;  // published, billions
    double tolerance;          // relative
  };
  // Mixtral 8x7B 46.7B / 12.9B (arXiv:2401.04088); 8x22B 141B / 39B (Mistral AI); Qwen3-30B-A3B
  // 30.5B / 3.3B and 235B-A22B 235B / 22B (arXiv:2505.09388 Table 2); DeepSeek-V2 236B / 21B
  // (arXiv:2405.04434 §3.1.1; 21B is rounded to the billion, so 20.5-21.5B). Megatron counts no
  // QK-norm and no biases, so the match is to the published rounding.
  for (const Case& c :
       {Case{"mixtral-8x7b", 46.7, 12.9, 0.005}, Case{"mixtral-8x22b", 141, 39, 0.01},
        Case{"qwen3-30b-a3b", 30.5, 3.3, 0.02}, Case{"qwen3-235b-a22b", 235, 22, 0.01},
        Case{"deepseek-v2", 236, 21, 0.025}}) {
    INFO(c.file);
    const ModelSpec m = shipped(c.file);
    CHECK(total_parameters(m, 1) / 1e9 == Approx(c.total_b).epsilon(c.tolerance));
    CHECK(active_parameters(m, 1) / 1e9 == Approx(c.active_b).epsilon(c.tolerance));
  }
  // DeepSeek-V3: 671B main model (+ 14B MTP module incl. its projection and shared embedding),
  // 37B active (arXiv:2412.19437). Megatron's count: 671.03B without the MTP layer (see
  // parameter-count tests), and the MTP layer as one more MoE layer (11.51B).
  const ModelSpec v3 = shipped("deepseek-v3");
  CHECK(total_parameters(v3, 1) == 682533690368.0);
  ModelSpec main_model = v3;
  main_model.mtp_layers = 0;
  CHECK(total_parameters(main_model, 1) / 1e9 == Approx(671).epsilon(0.001));
  CHECK(active_parameters(main_model, 1) / 1e9 == Approx(37).epsilon(0.02));
}

TEST_CASE("MoE, MLA and MTP parameters as Megatron's estimator counts them",
          "[models][spec][moe]") {
  // DeepSeek-V3 (RMSNorm ν = 1, SwiGLU γ = 3/2), megatron_formulas.md §1:
  //   MLA  1536·(h + 128·192 + 1) + 512·(h + 128·256 + 1) + 64h + 128·128·h = 187,107,328
  //   dense layer  att + 3h·18432 + 2h = 583,483,392
  //   MoE layer    att + 3h·2048 (shared) + 3h·2048·256 (routed) + 2h + 256h (router)
  //                = 11,507,286,016; active (8 routed): 585,318,400
  //   embedding + output 2·129280·h = 1,853,358,080; final norm h
  const ModelSpec v3 = deepseek_v3();
  CHECK(attention_parameters(v3) == 187107328.0);
  CHECK(layer_parameters(v3, 0).total() == 583483392.0);
  const LayerParameters moe = layer_parameters(v3, 3);
  CHECK(moe.total() == 11507286016.0);
  CHECK(moe.active() == 585318400.0);
  CHECK(moe.router == 7168.0 * 256);
  CHECK(moe.experts == 3.0 * 7168 * 2048 * 256);
  CHECK(moe.mlp == 3.0 * 7168 * 2048);  // the shared expert, TP-sharded like a dense MLP
  // N = 3·dense + 58·MoE + h + 2·V·h = 671,026,404,352, plus one MTP layer typed like the last
  // (MoE): 682,533,690,368. Active: 3·dense + 59·active MoE + h + 2Vh = 38,137,601,024.
  CHECK(total_parameters(v3, 1) == 682533690368.0);
  CHECK(active_parameters(v3, 1) == 38137601024.0);
  // Mixtral 8x7B: GQA attention 2h·4096·(1 + 8/32) = 41,943,040, each expert 3h·14336 =
  // 176,160,768, norms 2h, router 8h: 32 layers + h + 2·32000·h = 46,702,792,704 total
  // (published 46.7B); with 2 experts per layer 12,879,925,248 active (published 12.9B).
  CHECK(total_parameters(mixtral_8x7b(), 1) == 46702792704.0);
  CHECK(active_parameters(mixtral_8x7b(), 1) == 12879925248.0);
  // A dense model: active = total.
  CHECK(active_parameters(llama3_70b(), 8) == total_parameters(llama3_70b(), 8));
}

TEST_CASE("MLA parameters with and without q-LoRA, LayerNorm counting ν = 2",
          "[models][spec][mla]") {
  // h = 4, n = 2, r_q = 3, r_kv = 2, d_qk = 2, d_r = 1, d_v = 2, LayerNorm (ν = 2):
  // Q 3·(4 + 2·3 + 2) = 36, KV 2·(4 + 2·4 + 2) + 4·1 = 32, O 2·2·4 = 16 -> 84.
  // Without q-LoRA Q = h·n·(d_qk + d_r) = 24 -> 72.
  ModelSpec m = gpt_model(1, 4, 2, 100);
  MlaSpec mla;
  mla.q_lora_rank = 3;
  mla.kv_lora_rank = 2;
  mla.qk_head_dim = 2;
  mla.qk_rope_head_dim = 1;
  mla.v_head_dim = 2;
  m.mla = mla;
  CHECK(attention_parameters(m) == 84.0);
  m.mla->q_lora_rank.reset();
  CHECK(attention_parameters(m) == 72.0);
}
