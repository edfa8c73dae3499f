#include "models/sweep/sweep_report.hpp"

#include <algorithm>
#include <cstdio>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

nlohmann::json counts_to_json(const SweepCounts& c) {
  nlohmann::json reasons = nlohmann::json::object();
  for (const auto& [key, count] : c.layout_reasons) {
    reasons[key] = {{"count", count}, {"example", c.reason_examples.at(key)}};
  }
  return {{"points", c.points},
          {"pruned_by_layout", c.pruned_by_layout},
          {"pruned_by_memory", c.pruned_by_memory},
          {"pruned_by_recompute", c.pruned_by_recompute},
          {"recompute_fallbacks", c.recompute_fallbacks},
          {"simulated", c.simulated},
          {"failed", c.failed},
          {"layout_reasons", reasons}};
}

SweepCounts counts_from_json(const nlohmann::json& j) {
  SweepCounts c;
  c.points = j.at("points").get<std::int64_t>();
  c.pruned_by_layout = j.at("pruned_by_layout").get<std::int64_t>();
  c.pruned_by_memory = j.at("pruned_by_memory").get<std::int64_t>();
  c.pruned_by_recompute = j.value("pruned_by_recompute", std::int64_t{0});
  c.recompute_fallbacks = j.value("recompute_fallbacks", std::int64_t{0});
  c.simulated = j.at("simulated").get<std::int64_t>();
  c.failed = j.at("failed").get<std::int64_t>();
  for (const auto& [key, value] : j.at("layout_reasons").items()) {
    c.layout_reasons[key] = value.at("count").get<std::int64_t>();
    c.reason_examples[key] = value.at("example").get<std::string>();
  }
  return c;
}

void add_counts(SweepCounts& total, const SweepCounts& part) {
  total.points += part.points;
  total.pruned_by_layout += part.pruned_by_layout;
  total.pruned_by_memory += part.pruned_by_memory;
  total.pruned_by_recompute += part.pruned_by_recompute;
  total.recompute_fallbacks += part.recompute_fallbacks;
  total.simulated += part.simulated;
  total.failed += part.failed;
  for (const auto& [key, count] : part.layout_reasons) total.layout_reasons[key] += count;
  for (const auto& [key, example] : part.reason_examples)
    total.reason_examples.emplace(key, example);
}

}  // namespace

std::string fingerprint(const std::string& text) {
  std::uint64_t hash = 14695981039346656037ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

bool overlaps_best_band(const SweepReport& report, std::size_t i) {
  if (!report.band || i >= report.rows.size() || report.rows[i].failed()) return false;
  const auto best = std::find_if(report.rows.begin(), report.rows.end(),
                                 [](const SweepRow& r) { return !r.failed(); });
  const double t_best = objective_s(*best, report.objective);
  const double t = objective_s(report.rows[i], report.objective);
  return t / (1 + report.band->error_p90) <= t_best / (1 + report.band->error_p10);
}

namespace {

nlohmann::json band_to_json(const PredictionInterval& b) {
  return {{"error_p10", b.error_p10}, {"error_p50", b.error_p50}, {"error_p90", b.error_p90},
          {"rows", b.rows},           {"basis", b.basis},         {"unmatched", b.unmatched}};
}

PredictionInterval band_from_json(const nlohmann::json& j) {
  PredictionInterval b;
  b.error_p10 = j.at("error_p10").get<double>();
  b.error_p50 = j.at("error_p50").get<double>();
  b.error_p90 = j.at("error_p90").get<double>();
  b.low_s = 1 / (1 + b.error_p90);
  b.high_s = 1 / (1 + b.error_p10);
  b.rows = j.at("rows").get<int>();
  b.basis = j.at("basis").get<std::string>();
  b.unmatched = j.at("unmatched").get<std::string>();
  return b;
}

}  // namespace

nlohmann::json report_to_json(const SweepReport& r) {
  nlohmann::json space = nlohmann::json::object();
  for (const auto& [knob, values] : r.space) space[knob] = values;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    rows.push_back(row_to_json(r.rows[i]));
    if (r.band) rows.back()["band_overlaps_best"] = overlaps_best_band(r, i);
  }
  nlohmann::json document = {{"model", r.model},
                             {"cluster", r.cluster},
                             {"num_gpus", r.num_gpus},
                             {"seq_len", r.seq_len},
                             {"global_batch", r.global_batch},
                             {"fidelity", r.fidelity},
                             {"network", r.network},
                             {"fingerprint", r.fingerprint},
                             {"shard", to_string(r.shard)},
                             {"space", space},
                             {"notes", r.notes},
                             {"counts", counts_to_json(r.counts)},
                             {"rows", rows}};
  if (r.samples > 1 || r.objective != SweepObjective::step) {
    document["objective"] = to_string(r.objective);
    document["samples"] = r.samples;
  }
  if (r.band) document["prediction_interval"] = band_to_json(*r.band);
  return document;
}

SweepReport report_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    SweepReport r;
    r.model = j.at("model").get<std::string>();
    r.cluster = j.at("cluster").get<std::string>();
    r.num_gpus = j.at("num_gpus").get<std::int64_t>();
    r.seq_len = j.at("seq_len").get<std::int64_t>();
    r.global_batch = j.at("global_batch").get<std::int64_t>();
    r.fidelity = j.at("fidelity").get<std::string>();
    r.network = j.at("network").get<std::string>();
    r.fingerprint = j.at("fingerprint").get<std::string>();
    r.shard = parse_shard(j.at("shard").get<std::string>(), where + ": shard");
    for (const auto& [knob, values] : j.at("space").items()) {
      r.space.emplace_back(knob, values.get<std::string>());
    }
    r.notes = j.at("notes").get<std::vector<std::string>>();
    r.counts = counts_from_json(j.at("counts"));
    for (const auto& row : j.at("rows")) r.rows.push_back(row_from_json(row, where));
    const auto objective = parse_sweep_objective(j.value("objective", std::string("step")));
    if (!objective)
      throw InputError(where, "objective", j["objective"].dump(), "step, p50, p90 or mean");
    r.objective = *objective;
    r.samples = j.value("samples", 1);
    if (j.contains("prediction_interval")) r.band = band_from_json(j.at("prediction_interval"));
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, "", "", std::string("not a wallsim sweep.json: ") + e.what());
  }
}

SweepReport merge_reports(const std::vector<SweepReport>& shards,
                          const std::vector<std::string>& names) {
  if (shards.empty()) throw InputError("sweep-merge: nothing to merge");
  SweepReport merged = shards.front();
  merged.counts = {};
  merged.rows.clear();
  const std::int64_t count = shards.front().shard.count;
  std::vector<std::string> seen(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const SweepReport& s = shards[i];
    if (s.fingerprint != merged.fingerprint || s.shard.count != count) {
      throw InputError(names[i], "fingerprint", s.fingerprint,
                       "is not a shard of the same sweep as " + names.front() +
                           " (same config, space and shard count needed)");
    }
    auto& owner = seen[static_cast<std::size_t>(s.shard.index)];
    if (!owner.empty()) {
      throw InputError(names[i], "shard", to_string(s.shard), "already given by " + owner);
    }
    owner = names[i];
    add_counts(merged.counts, s.counts);
    merged.rows.insert(merged.rows.end(), s.rows.begin(), s.rows.end());
  }
  for (std::int64_t k = 0; k < count; ++k) {
    if (seen[static_cast<std::size_t>(k)].empty()) {
      throw InputError("sweep-merge: shard " + std::to_string(k) + "/" + std::to_string(count) +
                       " is missing: every shard 0.." + std::to_string(count - 1) + " is needed");
    }
  }
  merged.shard = {0, 1};
  sort_rows(merged.rows, merged.objective);
  return merged;
}

}  // namespace wallsim::models
