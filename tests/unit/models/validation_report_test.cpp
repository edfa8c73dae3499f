#include "models/validation/validation_report.hpp"

#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/run_config.hpp"
#include "test_models.hpp"

using Catch::Matchers::Contains;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

ValidationRow row(const std::string& id, double error, RunKind kind, const std::string& gpu) {
  ValidationRow r;
  r.id = id;
  r.error = error;
  r.tolerance = 0.5;
  r.kind = kind;
  r.traits.gpu = gpu;
  return r;
}

RunKind kind_of(const std::string& id) {
  return run_kind(load_run_config(source_path("configs/validation/" + id + ".json")));
}

}  // namespace

TEST_CASE(
    "a validation row's kind: MoE whatever its sequence, else long context from 32K tokens "
    "or with CP, else dense",
    "[validation]") {
  // Qwen3-235B-A22B at 128K tokens with CP 8: the model decides.
  CHECK(kind_of("mz_qwen3_235b_h100_256_128k") == RunKind::kMoe);
  // Llama 2 7B at 128K tokens, CP 4.
  CHECK(kind_of("nemo_longseq_h100_128k") == RunKind::kLongContext);
  // Llama 3 8B at 8K tokens with CP 2: context parallelism alone makes it long context.
  CHECK(kind_of("nemo2407_h100_11") == RunKind::kLongContext);
  // Llama 2 7B at 16K tokens, CP 1: under 32K and without CP.
  CHECK(kind_of("nemo_longseq_h100_16k") == RunKind::kDense);
  CHECK(std::string(to_string(RunKind::kLongContext)) == "long_context");
}

TEST_CASE(
    "the MAPE by kind and by GPU is each group's mean absolute error over its simulated "
    "rows",
    "[validation]") {
  std::vector<ValidationRow> rows = {
      row("a", +0.10, RunKind::kDense, "h100-sxm"),
      row("b", -0.20, RunKind::kDense, "a100-sxm-80gb"),
      row("c", +0.05, RunKind::kLongContext, "h100-sxm"),
  };
  ValidationRow failed = row("d", 0.0, RunKind::kMoe, "b200");
  failed.failure = "could not be simulated";
  rows.push_back(failed);

  // dense: (10 + 20) / 2 = 15%; long context: 5%; the MoE row failed, so no MoE group.
  const auto kinds = validation_mape_by_kind(rows);
  REQUIRE(kinds.size() == 2);
  CHECK(kinds[0].group == "dense");
  CHECK(kinds[0].mape == Approx(15.0));
  CHECK(kinds[0].rows == 2);
  CHECK(kinds[1].group == "long_context");
  CHECK(kinds[1].mape == Approx(5.0));
  // By GPU in name order: a100 20%; h100 (10 + 5) / 2 = 7.5%; b200's only row failed.
  const auto gpus = validation_mape_by_gpu(rows);
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].group == "a100-sxm-80gb");
  CHECK(gpus[0].mape == Approx(20.0));
  CHECK(gpus[1].group == "h100-sxm");
  CHECK(gpus[1].mape == Approx(7.5));
  CHECK(gpus[1].rows == 2);

  std::ostringstream table;
  write_validation_table(table, rows);
  CHECK_THAT(table.str(), Contains("dense 15.0% (2), long_context 5.0% (1)\n"));
  CHECK_THAT(table.str(), Contains("MAPE by GPU: a100-sxm-80gb 20.0% (1), h100-sxm 7.5% (2)\n"));

  const nlohmann::json json = validation_json(rows);
  CHECK(json["mape_by_kind"]["dense"]["rows"] == 2);
  CHECK(json["mape_by_kind"]["long_context"]["mape"].get<double>() == Approx(5.0));
  CHECK_FALSE(json["mape_by_kind"].contains("moe"));
  CHECK(json["mape_by_gpu"]["h100-sxm"]["mape"].get<double>() == Approx(7.5));
  CHECK(json["rows"][0]["kind"] == "dense");
  CHECK(json["rows"][2]["gpu"] == "h100-sxm");
  CHECK_FALSE(json["rows"][3].contains("kind"));
}
