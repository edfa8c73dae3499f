// The result of a sweep (or of one shard of it), as data: what was swept, how many points each
// stage pruned, and one row per simulated point. Writers (sweep_writers.hpp, sweep_html.hpp)
// turn it into sweep.csv, sweep.json and sweep.html; merge_reports joins shards.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_shard.hpp"

namespace wallsim::models {

struct SweepCounts {
  std::int64_t points = 0;  // in the space (or in this shard)
  std::int64_t pruned_by_layout = 0;
  std::int64_t pruned_by_memory = 0;
  // A lighter recompute of the same layout passes the memory check (sweep_evaluate.hpp).
  std::int64_t pruned_by_recompute = 0;
  std::int64_t simulated = 0;
  // Of pruned_by_recompute, simulated after all (in `simulated` too): the lighter recompute's
  // simulation did not fit in memory or failed.
  std::int64_t recompute_fallbacks = 0;
  std::int64_t failed = 0;  // simulated, with an error
  // Layout prunes by the rule (JSON path) that failed, and one message per rule.
  std::map<std::string, std::int64_t> layout_reasons;
  std::map<std::string, std::string> reason_examples;
};

struct SweepReport {
  std::string model;
  std::string cluster;
  std::int64_t num_gpus = 0;
  std::int64_t seq_len = 0;
  std::int64_t global_batch = 0;
  std::string fidelity;
  std::string network;
  std::string fingerprint;  // of the base config and the space: shards of one sweep share it
  ShardSpec shard;
  std::vector<std::pair<std::string, std::string>> space;  // knob → values
  std::vector<std::string> notes;
  SweepCounts counts;
  SweepObjective objective = SweepObjective::step;  // what the rows are ranked by
  int samples = 1;                                  // sampled steps per point (--samples)
  // wallsim's errors on published runs like this sweep's (around a 1 s step): every point shares
  // them, so two points are told apart only where their bands do not overlap.
  std::optional<PredictionInterval> band;
  std::vector<SweepRow> rows;  // sorted (sort_rows by objective)
};

// Whether row i's validation band overlaps that of the best row (the first that did not fail):
// t_i / (1 + e_p90) <= t_best / (1 + e_p10), with t the objective. False without a band.
bool overlaps_best_band(const SweepReport& report, std::size_t i);

nlohmann::json report_to_json(const SweepReport& report);
// Throws InputError naming `where` for a document that is not a sweep.json.
SweepReport report_from_json(const nlohmann::json& json, const std::string& where);

// Joins the shards of one sweep: same fingerprint, shard indices 0..N-1 each exactly once.
// Throws InputError naming what does not fit.
SweepReport merge_reports(const std::vector<SweepReport>& shards,
                          const std::vector<std::string>& names);

// A stable 64-bit FNV-1a hash as 16 hex digits.
std::string fingerprint(const std::string& text);

}  // namespace wallsim::models
