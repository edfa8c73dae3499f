// `wallsim validate [--filter SUBSTRING] [--json] [--tolerance T]`: simulate every published run
// of configs/validation/published_runs.csv and print predicted against published, per row, with
// the error and the MAPE (models/validation/). It reports, and exits 0 whatever the errors (the
// validation test asserts the tolerances); a row that cannot be simulated is shown as FAILED
// with the reason and makes the exit code 1.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/run/simulate.hpp"
#include "models/validation/prediction_interval.hpp"
#include "models/validation/published_metric.hpp"
#include "models/validation/validation_report.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "tools/command.hpp"
#include "tools/report_files.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRowFailed = 1;  // some row could not be simulated (errors within tolerance or
                                   // not, the exit code is 0 otherwise: the test asserts)

struct ValidateOptions {
  std::string filter;
  bool json = false;
  std::optional<double> tolerance;  // overrides every row's own tolerance
  std::string write_errors;         // where to write the step-time errors ("" = nowhere)
};

std::string published_runs_path() {
  return data_root() + "/configs/validation/published_runs.csv";
}

models::RunConfig load_row_config(const models::PublishedRun& run, const std::string& csv_path) {
  const auto path = resolve_data_path(run.config, csv_path);
  if (!path) throw InputError(csv_path + " (" + run.id + ")", "config", run.config, "no such file");
  return models::load_run_config(*path);
}

models::ValidationRow validate_row(const models::PublishedRun& run, const std::string& csv_path) {
  const models::RunConfig config = load_row_config(run, csv_path);
  const Profile profile = models::run_profile(config);
  const auto result = models::simulate(config, profile.gpu, profile.comm);
  return models::make_validation_row(run, config, result.summary.iteration_time_s);
}

std::vector<models::PublishedRun> selected_runs(const ValidateOptions& options,
                                                const std::string& csv_path) {
  std::vector<models::PublishedRun> selected;
  for (auto& run : models::load_published_runs(csv_path)) {
    if (run.id.find(options.filter) == std::string::npos) continue;
    if (options.tolerance) run.tolerance = *options.tolerance;
    selected.push_back(std::move(run));
  }
  if (selected.empty()) {
    throw InputError("command line", "--filter", options.filter,
                     "matches no row id of " + csv_path);
  }
  return selected;
}

// Simulates one row; a row that cannot be simulated is reported, not fatal.
models::ValidationRow validate_with_progress(const models::PublishedRun& run,
                                             const std::string& csv_path,
                                             const std::string& counter) {
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "%s %s: %s on %lld GPUs ...", counter.c_str(), run.id.c_str(),
               run.model.c_str(), static_cast<long long>(run.num_gpus));
  std::fflush(stderr);
  try {
    models::ValidationRow row = validate_row(run, csv_path);
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    std::fprintf(stderr, " %+.1f%% (%.1f s)\n", 100.0 * row.error, took.count());
    return row;
  } catch (const std::exception& e) {
    std::fprintf(stderr, " failed: %s\n", e.what());
    return models::failed_validation_row(run, e.what());
  }
}

int run(const ValidateOptions& options) {
  const std::string csv_path = published_runs_path();
  const auto runs = selected_runs(options, csv_path);
  std::vector<models::ValidationRow> rows;
  bool all_simulated = true;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string counter =
        "[" + std::to_string(i + 1) + "/" + std::to_string(runs.size()) + "]";
    rows.push_back(validate_with_progress(runs[i], csv_path, counter));
    all_simulated = all_simulated && rows.back().failure.empty();
  }
  if (!options.write_errors.empty()) {
    write_output_file(options.write_errors, "--write-errors", [&](std::ostream& out) {
      out << models::step_time_errors_json(models::step_time_errors(rows)).dump(2) << "\n";
    });
  }
  if (options.json) {
    std::cout << models::validation_json(rows).dump(2) << "\n";
  } else {
    models::write_validation_table(std::cout, rows);
  }
  return all_simulated ? kExitOk : kExitRowFailed;
}

}  // namespace

void add_validate_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand(
      "validate",
      "Predicted against published training measurements (configs/validation/published_runs.csv)");
  sub->add_option("--filter", options->filter, "Only rows whose id contains this text");
  sub->add_flag("--json", options->json,
                "Print one JSON document {rows, mape, mape_by_kind, mape_by_gpu} on stdout");
  sub->add_option("--tolerance", options->tolerance,
                  "Relative tolerance for every row (default: each row's own, from the CSV)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--write-errors", options->write_errors,
                  "Write each simulated row's step-time error to FILE (the data of "
                  "summary.json's prediction_interval: configs/validation/step_time_errors.json)");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
