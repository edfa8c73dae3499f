// One simulated sweep point as a result row, and the order rows are reported in.
//
// Units: seconds, bytes, tokens/s per GPU; `mfu` is a fraction. A point whose simulation failed
// keeps its layout, analytical peak memory and `error`; its step time is 0 and it sorts last.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/sweep/sweep_space.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim::models {

struct SweepRow {
  std::int64_t index = 0;  // in the space's enumeration
  std::string id;          // point_id(point)
  SweepPoint point;
  std::int64_t dp = 1;
  std::int64_t num_microbatches = 1;
  double step_time_s = 0;
  double tokens_per_s_per_gpu = 0;
  double mfu = 0;
  double peak_bytes = 0;
  double hbm_bytes = 0;
  bool fits = false;
  std::string binding;  // memory | compute | communication ("" when the simulation failed)
  std::string error;    // why the simulation failed ("" when it did not)
  // The Megatron-LM arguments that launch this point (models/launch_args/megatron_export.hpp),
  // on one line.
  std::string megatron_args;
  // The step was extrapolated from the steps of pp + 1 and pp + 2 micro-batches
  // (steady_state_microbatches in sweep_evaluate.hpp), not simulated with all of them.
  bool extrapolated = false;
  // With --samples N: p10, p50, p90 and mean of the N sampled steps (seconds).
  std::optional<Percentiles> distribution;
  bool failed() const { return !error.empty(); }
};

// What a sweep ranks by: the (deterministic) step time, or a statistic of the sampled steps.
enum class SweepObjective { step, p50, p90, mean };
const char* to_string(SweepObjective objective);
std::optional<SweepObjective> parse_sweep_objective(const std::string& name);
// The row's value of the objective (step_time_s for `step` or a row without samples).
double objective_s(const SweepRow& row, SweepObjective objective);

// Fastest first (shortest objective), failed points last; ties by point id.
void sort_rows(std::vector<SweepRow>& rows, SweepObjective objective = SweepObjective::step);

nlohmann::json row_to_json(const SweepRow& row);
// Throws InputError (naming `where`) when a field is missing or malformed.
SweepRow row_from_json(const nlohmann::json& json, const std::string& where);

}  // namespace wallsim::models
