#include "models/validation/prediction_interval.hpp"

#include <cmath>
#include <iterator>

#include <nlohmann/json.hpp>

#include "sim/report/percentiles.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

using nlohmann::json;

std::string context_name(bool long_context) {
  return long_context ? ">= 32K tokens" : "< 32K tokens";
}

std::string kind_name(bool moe) {
  return moe ? "MoE" : "dense";
}

// The match levels, tightest first: every trait, then without the context regime, then
// without the kind, then any published row.
struct Match {
  bool gpu, kind, context;
};
constexpr Match kMatches[] = {
    {true, true, true}, {true, true, false}, {true, false, false}, {false, false, false}};

bool matches(const RunTraits& row, const RunTraits& run, const Match& m) {
  return (!m.gpu || row.gpu == run.gpu) && (!m.kind || row.moe == run.moe) &&
         (!m.context || row.long_context == run.long_context);
}

std::string basis_name(const RunTraits& run, const Match& m) {
  std::string name = m.gpu ? run.gpu : "any GPU";
  if (m.kind) name += ", " + kind_name(run.moe);
  if (m.context) name += ", " + context_name(run.long_context);
  return name;
}

// The run's traits no row of the whole basis shares, e.g. "MoE" when only dense rows exist.
std::string unmatched_traits(const RunTraits& run, const Match& m) {
  std::vector<std::string> missing;
  if (!m.gpu) missing.push_back(run.gpu);
  if (!m.kind) missing.push_back(kind_name(run.moe));
  if (!m.context) missing.push_back(context_name(run.long_context));
  std::string text;
  for (const auto& trait : missing) text += (text.empty() ? "" : ", ") + trait;
  return text;
}

double rounded(double error) {
  return std::round(error * 1e4) / 1e4;
}

template <typename T>
T field(const json& row, const char* key, const std::string& where, std::size_t index) {
  const std::string path = "rows[" + std::to_string(index) + "]." + key;
  if (!row.contains(key)) throw InputError(where, path, "(missing)", "required");
  try {
    return row.at(key).get<T>();
  } catch (const json::exception&) {
    throw InputError(where, path, row.at(key).dump(), "has the wrong type");
  }
}

}  // namespace

double step_time_error(const std::string& comparable, double metric_error) {
  if (comparable == "iteration_time_s") return metric_error;
  return 1.0 / (1.0 + metric_error) - 1.0;  // every other metric is a rate, ∝ 1 / t
}

json step_time_errors_json(const std::vector<StepTimeError>& rows) {
  json list = json::array();
  for (const auto& row : rows) {
    list.push_back({{"id", row.id},
                    {"gpu", row.traits.gpu},
                    {"moe", row.traits.moe},
                    {"long_context", row.traits.long_context},
                    {"error", rounded(row.error)}});
  }
  return {{"about",
           "Step-time errors of wallsim against the published runs of published_runs.csv "
           "(t_predicted / t_measured - 1), written by `wallsim validate --write-errors`; "
           "the band of summary.json's prediction_interval is drawn from them."},
          {"rows", list}};
}

std::vector<StepTimeError> step_time_errors(const std::vector<ValidationRow>& rows) {
  std::vector<StepTimeError> errors;
  for (const auto& row : rows) {
    if (!row.failure.empty()) continue;
    errors.push_back({row.id, row.traits, step_time_error(row.comparable, row.error)});
  }
  return errors;
}

std::vector<StepTimeError> parse_step_time_errors(const json& document, const std::string& where) {
  if (!document.is_object() || !document.contains("rows") || !document["rows"].is_array()) {
    throw InputError(where, "rows", "(missing)", "an array of step-time errors");
  }
  std::vector<StepTimeError> rows;
  const json& list = document["rows"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    StepTimeError row;
    row.id = field<std::string>(list[i], "id", where, i);
    row.traits.gpu = field<std::string>(list[i], "gpu", where, i);
    row.traits.moe = field<bool>(list[i], "moe", where, i);
    row.traits.long_context = field<bool>(list[i], "long_context", where, i);
    row.error = field<double>(list[i], "error", where, i);
    if (!(row.error > -1.0) || !std::isfinite(row.error)) {
      throw InputError(where, "rows[" + std::to_string(i) + "].error", list[i]["error"].dump(),
                       "must be a finite number above -1");
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string step_time_errors_path() {
  return data_root() + "/configs/validation/step_time_errors.json";
}

std::vector<StepTimeError> load_step_time_errors(const std::string& path) {
  const std::string text = read_data_file(path);
  const json document = json::parse(text, nullptr, false);
  if (document.is_discarded()) throw InputError(path, "", "", "is not valid JSON");
  return parse_step_time_errors(document, path);
}

std::optional<PredictionInterval> prediction_interval(const std::vector<StepTimeError>& rows,
                                                      const RunTraits& traits, double step_s) {
  for (const Match& m : kMatches) {
    std::vector<double> errors;
    for (const auto& row : rows) {
      if (matches(row.traits, traits, m)) errors.push_back(row.error);
    }
    const bool last = &m == &kMatches[std::size(kMatches) - 1];
    if (static_cast<int>(errors.size()) < kMinimumBasisRows && !(last && !errors.empty())) {
      continue;
    }
    PredictionInterval band;
    band.rows = static_cast<int>(errors.size());
    const Percentiles p = percentiles(std::move(errors));
    band.error_p10 = p.p10;
    band.error_p50 = p.p50;
    band.error_p90 = p.p90;
    band.low_s = step_s / (1 + p.p90);
    band.high_s = step_s / (1 + p.p10);
    band.basis = basis_name(traits, m);
    band.unmatched = unmatched_traits(traits, m);
    return band;
  }
  return std::nullopt;
}

void add_prediction_interval(const RunConfig& config, RunSummary& summary) {
  summary.prediction_interval = prediction_interval(load_step_time_errors(step_time_errors_path()),
                                                    run_traits(config), summary.iteration_time_s);
  if (summary.prediction_interval &&
      (config.calibration_inline || !config.calibration_path.empty())) {
    summary.notes.push_back(
        "the validation band comes from wallsim's errors with the shipped calibration profile; "
        "with this run's own profile it is indicative only");
  }
}

}  // namespace wallsim::models
