// Predicted against published, row by row: the data `wallsim validate` and the validation test
// print, and its writers (a text table and one JSON document).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/run_config.hpp"
#include "models/validation/published_metric.hpp"

namespace wallsim::models {

// Sequence length from which a run counts as long-context (prediction_interval.hpp's basis).
inline constexpr std::int64_t kLongContextTokens = 32768;

// What a published run and a predicted one are matched on (prediction_interval.hpp).
struct RunTraits {
  std::string gpu;  // calibration profile name of the cluster's GPU ("h100-sxm")
  bool moe = false;
  bool long_context = false;  // seq_len >= kLongContextTokens
};

RunTraits run_traits(const RunConfig& config);

// A row's kind for the MAPE by kind: kMoe for a mixture-of-experts model; else kLongContext from
// kLongContextTokens or with context parallelism (cp > 1); else kDense.
enum class RunKind { kDense, kLongContext, kMoe };
RunKind run_kind(const RunConfig& config);
const char* to_string(RunKind kind);  // "dense", "long_context", "moe"

struct ValidationRow {
  std::string id;
  std::string model;  // the run config's model name
  std::int64_t num_gpus = 0;
  std::string layout;  // layout_label()
  std::string metric;  // the published metric's name
  std::string comparable;
  double published = 0;
  double predicted = 0;
  double error = 0;  // predicted / published − 1
  double tolerance = 0;
  double iteration_time_s = 0;     // wallsim's prediction
  std::string source;              // citation: source, table
  std::string failure;             // why the row could not be simulated ("" when it was)
  RunTraits traits;                // of the simulated run (empty for a failed row)
  RunKind kind = RunKind::kDense;  // of the simulated run
  bool within_tolerance() const;   // false for a failed row
};

// "tp8 sp pp8 vpp3 dp1 mbs1 gbs64" from the validated layout.
std::string layout_label(const RunConfig& config);

// One row from wallsim's predicted iteration time (published_metric.hpp's conversion).
ValidationRow make_validation_row(const PublishedRun& run, const RunConfig& config,
                                  double iteration_time_s);

// A row that could not be simulated (bad config, a step that cannot finish): no prediction.
ValidationRow failed_validation_row(const PublishedRun& run, const std::string& failure);

// MAPE over the rows that were simulated, in percent.
double validation_mape(const std::vector<ValidationRow>& rows);

// The MAPE of one group of simulated rows (a kind, a GPU).
struct GroupMape {
  std::string group;
  double mape = 0;  // percent
  std::size_t rows = 0;
};

// By kind in the order dense, long_context, moe; by GPU (calibration profile name) in name
// order. Groups without a simulated row are left out.
std::vector<GroupMape> validation_mape_by_kind(const std::vector<ValidationRow>& rows);
std::vector<GroupMape> validation_mape_by_gpu(const std::vector<ValidationRow>& rows);

// The table (id, model, GPUs, layout, metric, published, predicted, error %, tolerance), then
// the MAPE and how many rows are within their tolerance, then the MAPE by kind and by GPU;
// failed rows say why.
void write_validation_table(std::ostream& out, const std::vector<ValidationRow>& rows);

// {"rows": [{id, model, num_gpus, layout, metric, comparable, published, predicted, error,
//  tolerance, within_tolerance, iteration_time_s, source, kind, gpu[, failure]}],
//  "mape": percent, "mape_by_kind": {kind: {mape, rows}}, "mape_by_gpu": {gpu: {mape, rows}}}.
// A failed row has null predicted, error and iteration_time_s and no kind or gpu; mape is null
// when no row was simulated.
nlohmann::json validation_json(const std::vector<ValidationRow>& rows);

}  // namespace wallsim::models
