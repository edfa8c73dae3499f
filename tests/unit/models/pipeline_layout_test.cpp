// parallel.pipeline_layout: Megatron-Core's --pipeline-model-parallel-layout grammar
// (megatron/core/transformer/pipeline_parallel_layer_layout.py) and what wallsim accepts.
#include "models/pipeline_layout.hpp"

#include <catch2/catch.hpp>

#include <stdexcept>

#include "models/run_config.hpp"
#include "test_models.hpp"

#include <nlohmann/json.hpp>

using namespace wallsim::models;

namespace {

std::vector<std::int64_t> decoders(const std::vector<LayoutStage>& stages) {
  std::vector<std::int64_t> counts;
  for (const auto& s : stages) counts.push_back(s.decoders);
  return counts;
}

}  // namespace

TEST_CASE("a layout string unrolls groups and repeats into stages", "[models][layout]") {
  // Megatron's own docstring example: "Ettt|(tt|)*29,m|L" is [E,t,t,t] + [t,t]·29 + [m] + [L].
  const auto stages = parse_pipeline_layout("Ettt|(tt|)*29,m|L");
  REQUIRE(stages.size() == 1 + 29 + 1 + 1);
  CHECK(stages.front().embedding);
  CHECK(stages.front().decoders == 3);
  CHECK(stages[1].decoders == 2);
  CHECK(stages[29].decoders == 2);
  CHECK(stages[30].mtp == 1);
  CHECK(stages[31].loss);
  // "t*3" repeats one character; commas are cosmetic.
  CHECK(decoders(parse_pipeline_layout("Et*3|t,t|ttL")) == std::vector<std::int64_t>{3, 2, 2});
  // A repeat inside a group unrolls too (Megatron unrolls groups first, then characters).
  CHECK(decoders(parse_pipeline_layout("Et|(t*2|)*3tL")) ==
        std::vector<std::int64_t>{1, 2, 2, 2, 1});
  // An empty stage is allowed (a stage with only the embedding or only the loss).
  CHECK(decoders(parse_pipeline_layout("E|t*4|L")) == std::vector<std::int64_t>{0, 4, 0});
}

TEST_CASE("malformed layouts name the problem", "[models][layout]") {
  CHECK_THROWS_WITH(parse_pipeline_layout("Etx|L"), Catch::Contains("unknown layer character 'x'"));
  CHECK_THROWS_WITH(parse_pipeline_layout("E(tt|*2L"), Catch::Contains("without ')'"));
  CHECK_THROWS_WITH(parse_pipeline_layout("Et*|L"), Catch::Contains("repeat count"));
  CHECK_THROWS_WITH(parse_pipeline_layout("Et*0|L"), Catch::Contains("at least 1"));
  CHECK_THROWS_WITH(parse_pipeline_layout("((t)*2)*2"), Catch::Contains("do not nest"));
  CHECK_THROWS_WITH(parse_pipeline_layout("tE|tL"), Catch::Contains("'E' must open its stage"));
}

TEST_CASE("a layout must place the model's layers as Megatron requires", "[models][layout]") {
  CHECK(pipeline_layout_problem(parse_pipeline_layout("Et|tL"), 2, 0) == "");
  CHECK_THAT(pipeline_layout_problem(parse_pipeline_layout("t|EtL"), 2, 0),
             Catch::Contains("embedding"));
  CHECK_THAT(pipeline_layout_problem(parse_pipeline_layout("Et|t"), 2, 0), Catch::Contains("loss"));
  CHECK_THAT(pipeline_layout_problem(parse_pipeline_layout("Et|tL"), 3, 0),
             Catch::Contains("places 2 decoder layers"));
  // MTP runs after the loss's output layer on the last stage; a standalone stage is refused.
  CHECK(pipeline_layout_problem(parse_pipeline_layout("Et|tmL"), 2, 1) == "");
  CHECK_THAT(pipeline_layout_problem(parse_pipeline_layout("Et|t|m|L"), 2, 1),
             Catch::Contains("standalone MTP"));
  CHECK_THAT(pipeline_layout_problem(parse_pipeline_layout("Et|tL"), 2, 1),
             Catch::Contains("places 0 MTP layers"));
}

namespace {

// 32 layers (Llama 3 8B's count) of a small shape on pp 4.
nlohmann::json layout_config(const std::string& layout) {
  return {
      {"model",
       {{"layers", 32}, {"hidden", 1024}, {"heads", 16}, {"ffn_hidden", 4096}, {"vocab", 32000}}},
      {"cluster", "../clusters/dgx-h100.json"},
      {"num_gpus", 8},
      {"parallel", {{"pp", 4}, {"pipeline_layout", layout}}},
      {"training", {{"seq_len", 2048}, {"global_batch", 8}}}};
}

RunConfig config_of(const nlohmann::json& doc) {
  return run_config_from_json(doc,
                              std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/layout.json");
}

}  // namespace

TEST_CASE("a layout sets vpp and each virtual stage's layers", "[models][layout]") {
  // 8 stages over pp 4: vpp 2. Chain order is Megatron's vpp_rank·pp + pp_rank, so stage 0
  // holds virtual stages 0 and 4, stage 3 virtual stages 3 and 7.
  const RunConfig config = config_of(layout_config("Et*3|(tttt|)*6,t*5L"));
  CHECK(config.layout.vpp == 2);
  const auto& stages = config.layout.placement.stages;
  REQUIRE(stages.size() == 4);
  CHECK(stages[0].chunks[0].first_layer == 0);
  CHECK(stages[0].chunks[0].count == 3);
  CHECK(stages[0].chunks[1].first_layer == 3 + 4 * 3);  // after virtual stages 0-3
  CHECK(stages[3].chunks[1].count == 5);
  CHECK(stages[3].chunks[1].first_layer == 27);
  CHECK(config.layout.placement.uneven);
}

TEST_CASE("layout errors name parallel.pipeline_layout", "[models][layout]") {
  CHECK_THROWS_WITH(
      config_of(layout_config("Et*3|(tttt|)*6,t*4L")),
      Catch::Contains("parallel.pipeline_layout") && Catch::Contains("places 31 decoder layers"));
  CHECK_THROWS_WITH(config_of(layout_config("Et*3|(tttt|)*5,t*9L")),
                    Catch::Contains("7 stages, which must divide by pp = 4"));
  nlohmann::json vpp = layout_config("Et*3|(tttt|)*6,t*5L");
  vpp["parallel"]["vpp"] = 4;
  CHECK_THROWS_WITH(config_of(vpp), Catch::Contains("but parallel.vpp is 4"));
  nlohmann::json both = layout_config("Et*3|(tttt|)*6,t*5L");
  both["parallel"]["first_stage_layers"] = 3;
  CHECK_THROWS_WITH(config_of(both), Catch::Contains("cannot be given with it"));
}
