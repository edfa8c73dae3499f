// How far wallsim's step time is from measured ones on published runs like the one predicted:
// an empirical band around a prediction (`prediction_interval` in summary.json).
//
// Every row of `wallsim validate` gives one relative error of the predicted step time,
// e = t_predicted / t_measured − 1 (a rate metric such as TFLOP/s or tokens/s is ∝ 1/t, so its
// error e_rate gives e = 1 / (1 + e_rate) − 1). The rows are shipped as data
// (configs/validation/step_time_errors.json, written by `wallsim validate --write-errors`; the
// validation test fails when it no longer matches the model). For a run, the rows like it are
// those on the same GPU, of the same kind (dense or mixture-of-experts) and the same context
// regime (sequence < 32K tokens or ≥ 32K); with fewer than kMinimumBasisRows such rows the
// context, then the kind, then the GPU are dropped from the match, and the band says so. The
// band is [t / (1 + e_p90), t / (1 + e_p10)]: the step times a run whose prediction is t would
// measure if its error fell between the 10th and 90th percentiles of the basis rows' errors.
// It is an empirical band over a small, correlated set of published runs, not a confidence
// interval; a basis that had to drop a trait of the run says nothing about that trait's error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/run_config.hpp"
#include "models/validation/validation_report.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim::models {

// Fewest rows a basis may have before a trait is dropped from the match.
inline constexpr int kMinimumBasisRows = 5;

// One validated row's step-time error.
struct StepTimeError {
  std::string id;
  RunTraits traits;
  double error = 0;  // t_predicted / t_measured − 1
};

// The step-time error of a row whose metric is `comparable` (published_metric.hpp's names) and
// whose error in that metric is `metric_error` (predicted / published − 1).
double step_time_error(const std::string& comparable, double metric_error);
// The simulated rows' step-time errors (failed rows are left out).
std::vector<StepTimeError> step_time_errors(const std::vector<ValidationRow>& rows);

// {"about": ..., "rows": [{"id", "gpu", "moe", "long_context", "error"}]}; errors rounded to
// 1e-4 so the file changes only when a prediction does.
nlohmann::json step_time_errors_json(const std::vector<StepTimeError>& rows);
// Throws InputError naming `where` when the document is malformed.
std::vector<StepTimeError> parse_step_time_errors(const nlohmann::json& document,
                                                  const std::string& where);
// The shipped file (configs/validation/step_time_errors.json under the data root).
std::string step_time_errors_path();
std::vector<StepTimeError> load_step_time_errors(const std::string& path);

// The band around `step_s` for a run with `traits`; nullopt when `rows` is empty.
std::optional<PredictionInterval> prediction_interval(const std::vector<StepTimeError>& rows,
                                                      const RunTraits& traits, double step_s);

// Sets summary.prediction_interval around its step time from the shipped errors
// (step_time_errors_path()); with the run's own calibration profile, a note says the band was
// measured with the shipped one. Throws InputError when the file is malformed.
void add_prediction_interval(const RunConfig& config, RunSummary& summary);

}  // namespace wallsim::models
