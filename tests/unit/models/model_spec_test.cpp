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
  CHECK_THROWS_WITH(parse(with("moe", json{{"experts", 8}})),
                    Contains("moe") && Contains("not supported yet"));
  CHECK_THROWS_WITH(parse(with("mla", json::object())), Contains("not supported yet"));
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
  moe["num_local_experts"] = 8;
  CHECK_THROWS_WITH(hugging_face_to_model_json(JsonNode(moe, "config.json", "")),
                    Contains("num_local_experts") && Contains("not supported yet"));
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
