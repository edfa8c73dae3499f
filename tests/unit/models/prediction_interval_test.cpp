// The validation band: step-time errors from a published row's metric, the basis of rows like
// the run, and the band's ends.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "models/validation/prediction_interval.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

StepTimeError row(const std::string& gpu, bool moe, bool long_context, double error) {
  return {gpu + std::to_string(error), {gpu, moe, long_context}, error};
}

// Five dense H100 rows with errors -0.2, -0.1, 0, +0.1, +0.2: numpy's linear percentiles put
// p10 at position 0.4 (-0.2 + 0.4·0.1 = -0.16) and p90 at position 3.6 (0.1 + 0.6·0.1 = 0.16).
std::vector<StepTimeError> five_dense_h100() {
  std::vector<StepTimeError> rows;
  for (double e : {-0.2, -0.1, 0.0, 0.1, 0.2}) rows.push_back(row("h100-sxm", false, false, e));
  return rows;
}

}  // namespace

TEST_CASE("a rate metric's error turns into the step time's through t proportional to 1 over rate",
          "[validation][band]") {
  // 10% more TFLOP/s than published means a step 1/1.1 as long: -9.09%.
  CHECK(step_time_error("narayanan_eq3_tflops_per_gpu", 0.1) == Approx(1 / 1.1 - 1));
  CHECK(step_time_error("tokens_per_s_per_gpu", -0.2) == Approx(1 / 0.8 - 1));
  CHECK(step_time_error("iteration_time_s", -0.3) == -0.3);
}

TEST_CASE("the band spans the step times the p10 and p90 errors of matching rows imply",
          "[validation][band]") {
  const auto band = prediction_interval(five_dense_h100(), {"h100-sxm", false, false}, 2.0);
  REQUIRE(band);
  CHECK(band->rows == 5);
  CHECK(band->error_p10 == Approx(-0.16));
  CHECK(band->error_p90 == Approx(0.16));
  CHECK(band->error_p50 == Approx(0.0).margin(1e-12));
  // A prediction 16% too slow means a measured step of 2 / 1.16; 16% too fast, 2 / 0.84.
  CHECK(band->low_s == Approx(2 / 1.16));
  CHECK(band->high_s == Approx(2 / 0.84));
  CHECK(band->basis == "h100-sxm, dense, < 32K tokens");
  CHECK(band->unmatched.empty());
}

TEST_CASE("a trait too few rows share is dropped from the basis and named", "[validation][band]") {
  auto rows = five_dense_h100();
  rows.push_back(row("h100-sxm", true, false, -0.5));  // one MoE row: fewer than 5
  const auto band = prediction_interval(rows, {"h100-sxm", true, true}, 1.0);
  REQUIRE(band);
  // Neither the MoE long-context rows (0) nor the MoE rows (1) reach 5: every H100 row counts.
  CHECK(band->rows == 6);
  CHECK(band->basis == "h100-sxm");
  CHECK(band->unmatched == "MoE, >= 32K tokens");
}

TEST_CASE("a GPU no row was measured on falls back to every row", "[validation][band]") {
  const auto band = prediction_interval(five_dense_h100(), {"b200", false, false}, 1.0);
  REQUIRE(band);
  CHECK(band->rows == 5);
  CHECK(band->basis == "any GPU");
  CHECK(band->unmatched == "b200, dense, < 32K tokens");
  CHECK_FALSE(prediction_interval({}, {"b200", false, false}, 1.0));
}

TEST_CASE("step-time errors round-trip through their JSON file", "[validation][band]") {
  const auto rows = five_dense_h100();
  const auto parsed = parse_step_time_errors(step_time_errors_json(rows), "errors.json");
  REQUIRE(parsed.size() == rows.size());
  CHECK(parsed[1].error == Approx(-0.1));
  CHECK(parsed[1].traits.gpu == "h100-sxm");
}

TEST_CASE("a malformed step-time error file names the row and key", "[validation][band]") {
  nlohmann::json document = step_time_errors_json(five_dense_h100());
  document["rows"][2]["error"] = -1.5;
  CHECK_THROWS_WITH(parse_step_time_errors(document, "errors.json"),
                    Catch::Contains("rows[2].error") && Catch::Contains("above -1"));
  document["rows"][2].erase("error");
  CHECK_THROWS_WITH(parse_step_time_errors(document, "errors.json"),
                    Catch::Contains("rows[2].error"));
}

TEST_CASE("the shipped step-time errors load and cover every validated GPU", "[validation][band]") {
  const auto rows = load_step_time_errors(step_time_errors_path());
  REQUIRE(rows.size() >= 50);
  const auto band = prediction_interval(rows, {"h100-sxm", false, false}, 1.0);
  REQUIRE(band);
  CHECK(band->low_s <= band->high_s);
  CHECK(band->unmatched.empty());
}
