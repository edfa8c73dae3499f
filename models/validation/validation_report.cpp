#include "models/validation/validation_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

namespace wallsim::models {
namespace {

std::string format(const char* pattern, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, pattern, value);
  return buffer;
}

// Enough digits for both 0.85 s and 771 TFLOP/s.
std::string format_metric(double value) {
  return format(std::abs(value) >= 100 ? "%.1f" : "%.3g", value);
}

std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string truncated(const std::string& text, std::size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 1) + "~";
}

}  // namespace

RunTraits run_traits(const RunConfig& config) {
  return {config.cluster.gpu, config.model.is_moe(), config.training.seq_len >= kLongContextTokens};
}

RunKind run_kind(const RunConfig& config) {
  if (config.model.is_moe()) return RunKind::kMoe;
  if (config.training.seq_len >= kLongContextTokens || config.layout.sizes.cp > 1) {
    return RunKind::kLongContext;
  }
  return RunKind::kDense;
}

const char* to_string(RunKind kind) {
  switch (kind) {
    case RunKind::kDense:
      return "dense";
    case RunKind::kLongContext:
      return "long_context";
    case RunKind::kMoe:
      return "moe";
  }
  return "dense";
}

bool ValidationRow::within_tolerance() const {
  return failure.empty() && std::abs(error) <= tolerance;
}

std::string layout_label(const RunConfig& config) {
  const Layout& l = config.layout;
  std::string label = "tp" + std::to_string(l.sizes.tp);
  if (l.sequence_parallel) label += " sp";
  if (l.sizes.cp > 1) label += " cp" + std::to_string(l.sizes.cp);
  label += " pp" + std::to_string(l.sizes.pp);
  if (l.vpp > 1) label += " vpp" + std::to_string(l.vpp);
  label += " dp" + std::to_string(l.sizes.dp);
  if (config.model.moe) {
    label += " ep" + std::to_string(l.expert.ep) + " etp" + std::to_string(l.expert.etp);
  }
  label += " mbs" + std::to_string(config.training.micro_batch);
  label += " gbs" + std::to_string(config.training.global_batch);
  return label;
}

ValidationRow make_validation_row(const PublishedRun& run, const RunConfig& config,
                                  double iteration_time_s) {
  ValidationRow row;
  row.id = run.id;
  row.model = config.model.name;
  row.num_gpus = config.num_gpus;
  row.layout = layout_label(config);
  row.metric = run.metric_name;
  row.comparable = to_string(run.comparable);
  row.published = run.metric_value;
  row.predicted = predicted_metric(run, config, iteration_time_s);
  row.error = relative_error(row.predicted, row.published);
  row.tolerance = run.tolerance;
  row.iteration_time_s = iteration_time_s;
  row.traits = run_traits(config);
  row.kind = run_kind(config);
  row.source = run.source + ", " + run.table_or_url;
  return row;
}

ValidationRow failed_validation_row(const PublishedRun& run, const std::string& failure) {
  ValidationRow row;
  row.id = run.id;
  row.model = run.model;
  row.num_gpus = run.num_gpus;
  row.metric = run.metric_name;
  row.comparable = to_string(run.comparable);
  row.published = run.metric_value;
  row.predicted = row.error = row.iteration_time_s = std::nan("");
  row.tolerance = run.tolerance;
  row.source = run.source + ", " + run.table_or_url;
  row.failure = failure.empty() ? "failed" : failure;
  return row;
}

double validation_mape(const std::vector<ValidationRow>& rows) {
  std::vector<double> errors;
  errors.reserve(rows.size());
  for (const auto& row : rows) {
    if (row.failure.empty()) errors.push_back(row.error);
  }
  return mean_absolute_percentage_error(errors);
}

namespace {

// The simulated rows' MAPE per group, in the order of `groups`.
std::vector<GroupMape> mape_by(const std::vector<ValidationRow>& rows,
                               const std::vector<std::string>& groups,
                               const std::function<std::string(const ValidationRow&)>& group_of) {
  std::vector<GroupMape> out;
  for (const std::string& group : groups) {
    std::vector<double> errors;
    for (const auto& row : rows) {
      if (row.failure.empty() && group_of(row) == group) errors.push_back(row.error);
    }
    if (errors.empty()) continue;
    out.push_back({group, mean_absolute_percentage_error(errors), errors.size()});
  }
  return out;
}

void write_groups(std::ostream& out, const char* title, const std::vector<GroupMape>& groups) {
  if (groups.empty()) return;
  out << title;
  char item[160];
  for (std::size_t i = 0; i < groups.size(); ++i) {
    std::snprintf(item, sizeof item, "%s%s %.1f%% (%zu)", i == 0 ? " " : ", ",
                  groups[i].group.c_str(), groups[i].mape, groups[i].rows);
    out << item;
  }
  out << "\n";
}

nlohmann::json groups_json(const std::vector<GroupMape>& groups) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& g : groups) out[g.group] = {{"mape", g.mape}, {"rows", g.rows}};
  return out;
}

}  // namespace

std::vector<GroupMape> validation_mape_by_kind(const std::vector<ValidationRow>& rows) {
  std::vector<std::string> kinds;
  for (RunKind k : {RunKind::kDense, RunKind::kLongContext, RunKind::kMoe}) {
    kinds.emplace_back(to_string(k));
  }
  return mape_by(rows, kinds, [](const ValidationRow& row) { return to_string(row.kind); });
}

std::vector<GroupMape> validation_mape_by_gpu(const std::vector<ValidationRow>& rows) {
  std::set<std::string> gpus;
  for (const auto& row : rows) {
    if (row.failure.empty()) gpus.insert(row.traits.gpu);
  }
  return mape_by(rows, {gpus.begin(), gpus.end()},
                 [](const ValidationRow& row) { return row.traits.gpu; });
}

void write_validation_table(std::ostream& out, const std::vector<ValidationRow>& rows) {
  char line[400];
  std::snprintf(line, sizeof line, "%-34s %-22s %5s  %-35s %-24s %10s %10s %8s %6s\n", "id",
                "model", "GPUs", "layout", "metric", "published", "predicted", "error", "tol");
  out << line;
  int within = 0, failed = 0;
  for (const auto& row : rows) {
    within += row.within_tolerance() ? 1 : 0;
    failed += row.failure.empty() ? 0 : 1;
    std::snprintf(line, sizeof line, "%-34s %-22s %5lld  %-35s %-24s %10s ", row.id.c_str(),
                  truncated(row.model, 22).c_str(), static_cast<long long>(row.num_gpus),
                  row.layout.c_str(), truncated(row.metric, 24).c_str(),
                  format_metric(row.published).c_str());
    out << line;
    if (!row.failure.empty()) {
      out << "FAILED: " << first_line(row.failure) << "\n";
      continue;
    }
    std::snprintf(line, sizeof line, "%10s %+7.1f%% %5.0f%%%s\n",
                  format_metric(row.predicted).c_str(), 100.0 * row.error, 100.0 * row.tolerance,
                  row.within_tolerance() ? "" : "  OUTSIDE");
    out << line;
  }
  std::snprintf(
      line, sizeof line, "MAPE %.1f%% over %zu simulated rows; %d of %zu within tolerance",
      validation_mape(rows), rows.size() - static_cast<std::size_t>(failed), within, rows.size());
  out << line;
  if (failed > 0) out << "; " << failed << " could not be simulated";
  out << "\n";
  write_groups(out, "MAPE by kind (long_context: >= 32K tokens or CP; moe: any sequence):",
               validation_mape_by_kind(rows));
  write_groups(out, "MAPE by GPU:", validation_mape_by_gpu(rows));
}

nlohmann::json validation_json(const std::vector<ValidationRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& row : rows) {
    list.push_back({{"id", row.id},
                    {"model", row.model},
                    {"num_gpus", row.num_gpus},
                    {"layout", row.layout},
                    {"metric", row.metric},
                    {"comparable", row.comparable},
                    {"published", row.published},
                    {"predicted", row.predicted},
                    {"error", row.error},
                    {"tolerance", row.tolerance},
                    {"within_tolerance", row.within_tolerance()},
                    {"iteration_time_s", row.iteration_time_s},
                    {"source", row.source}});
    if (row.failure.empty()) {
      list.back()["kind"] = to_string(row.kind);
      list.back()["gpu"] = row.traits.gpu;
    } else {
      list.back()["failure"] = row.failure;
    }
  }
  const bool any_simulated = std::any_of(
      rows.begin(), rows.end(), [](const ValidationRow& row) { return row.failure.empty(); });
  nlohmann::json mape = nullptr;
  if (any_simulated) mape = validation_mape(rows);
  return {{"rows", list},
          {"mape", mape},
          {"mape_by_kind", groups_json(validation_mape_by_kind(rows))},
          {"mape_by_gpu", groups_json(validation_mape_by_gpu(rows))}};
}

}  // namespace wallsim::models
