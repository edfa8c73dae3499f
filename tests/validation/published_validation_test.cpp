// Predicted against published training measurements: every row of
// configs/validation/published_runs.csv (dense runs without context parallelism from Narayanan
// et al. 2021, Korthikanti et al. 2022, the Megatron-LM README's H100 weak scaling and NeMo
// 24.07's performance summary; sources and choices in configs/validation/README.md). Each row is
// simulated with its run config and the shipped calibration profile of its GPU (one profile per
// GPU type for every row), converted into the source's own metric (published_metric.hpp) and
// must be within the row's tolerance. The test prints the table, as `wallsim validate` does.
#include <catch2/catch.hpp>

#include <cmath>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "models/run/simulate.hpp"
#include "models/validation/prediction_interval.hpp"
#include "models/validation/published_metric.hpp"
#include "models/validation/validation_report.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

std::string source_path(const std::string& relative) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/" + relative;
}

ValidationRow simulate_row(const PublishedRun& run) {
  try {
    const RunConfig config = load_run_config(source_path(run.config));
    const SimulationResult result = simulate(config);  // with the profile `wallsim run` uses
    return make_validation_row(run, config, result.summary.iteration_time_s);
  } catch (const std::exception& e) {
    return failed_validation_row(run, e.what());
  }
}

}  // namespace

TEST_CASE("published training runs are predicted within each row's tolerance",
          "[validation][published]") {
  const auto runs = load_published_runs(source_path("configs/validation/published_runs.csv"));
  REQUIRE(!runs.empty());
  std::vector<ValidationRow> rows;
  for (const auto& run : runs) rows.push_back(simulate_row(run));
  write_validation_table(std::cout, rows);
  for (const auto& row : rows) {
    INFO(row.id << ": " << row.metric << " published " << row.published << ", predicted "
                << row.predicted << " (" << row.source << ")");
    INFO(row.failure);
    CHECK(row.failure.empty());
    CHECK(std::abs(row.error) <= row.tolerance);
  }
  // The band of summary.json's prediction_interval is drawn from the shipped errors: they must
  // be the model's errors today. 0.5 percentage points leaves room for rounding and tiny
  // changes; a larger change needs the file rewritten with
  // `wallsim validate --write-errors configs/validation/step_time_errors.json`.
  const auto shipped = load_step_time_errors(step_time_errors_path());
  const auto fresh = step_time_errors(rows);
  REQUIRE(shipped.size() == fresh.size());
  for (std::size_t i = 0; i < fresh.size(); ++i) {
    INFO(fresh[i].id << ": shipped " << shipped[i].error << ", now " << fresh[i].error);
    CHECK(shipped[i].id == fresh[i].id);
    CHECK(shipped[i].traits.gpu == fresh[i].traits.gpu);
    CHECK(shipped[i].traits.moe == fresh[i].traits.moe);
    CHECK(shipped[i].traits.long_context == fresh[i].traits.long_context);
    CHECK(std::abs(shipped[i].error - fresh[i].error) <= 0.005);
  }
}
