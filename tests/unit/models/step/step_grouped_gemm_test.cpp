// The MoE expert GEMMs as grouped kernels (parallel.moe_grouped_gemm, default true) or as one
// GEMM kernel per local expert (false).
#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// base_config's layer (h 1024) with 8 experts of width 512, top-2, on tp 1 · dp 8 with ep 2:
// 4 local experts, each receiving 2048 tokens · 2 · 2 source ranks / 8 experts = 1024 rows.
json moe_config() {
  json doc = base_config();
  doc["model"]["layers"] = 1;
  doc["model"]["moe"] = {{"experts", 8}, {"topk", 2}, {"ffn_hidden", 512}};
  doc["parallel"] = {{"tp", 1}, {"ep", 2}};
  doc["training"]["global_batch"] = 8;
  return doc;
}

Time fc1_forward(const json& doc) {
  return first_duration(build(doc).graphs[0], "experts fc1 fwd");
}

}  // namespace

TEST_CASE("grouped expert GEMMs: one kernel over the local experts' problems",
          "[models][step][moe]") {
  // fc1 is gated: n = 2·512, k = 1024; four problems of 1024 rows in one kernel.
  GroupedGemmShape four;
  for (int e = 0; e < 4; ++e) four.problems.push_back({1024, 1024, 1024});
  CHECK(fc1_forward(moe_config()) == h100().grouped_gemm(four, Dtype::kBf16, 132));
}

TEST_CASE("without grouped GEMM each local expert is its own kernel, with its own launch",
          "[models][step][moe]") {
  json doc = moe_config();
  doc["parallel"]["moe_grouped_gemm"] = false;
  const Time one = h100().gemm({1024, 1024, 1024}, Dtype::kBf16, 132);
  CHECK(fc1_forward(doc) == one + one + one + one);
  // 1024 rows alone run at the table's 1024×1024×1024 rate (236.3 TFLOP/s), four folded at
  // 4096×1024×1024's (488.1): the loop is slower.
  CHECK(fc1_forward(doc) > fc1_forward(moe_config()));
}

TEST_CASE("moe_grouped_gemm on a dense model is an input error naming the key",
          "[models][step][moe]") {
  json doc = base_config();
  doc["parallel"]["moe_grouped_gemm"] = false;
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("parallel.moe_grouped_gemm") &&
                                          Catch::Contains("only applies to MoE models"));
}
