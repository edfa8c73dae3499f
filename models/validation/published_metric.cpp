#include "models/validation/published_metric.hpp"

#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "models/flops.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

constexpr std::array<std::pair<Comparable, const char*>, 8> kComparableNames = {{
    {Comparable::iteration_time_s, "iteration_time_s"},
    {Comparable::narayanan_eq3_tflops_per_gpu, "narayanan_eq3_tflops_per_gpu"},
    {Comparable::korthikanti_model_tflops_per_gpu, "korthikanti_model_tflops_per_gpu"},
    {Comparable::korthikanti_mfu_pct, "korthikanti_mfu_pct"},
    {Comparable::nemo_model_tflops_per_gpu, "nemo_model_tflops_per_gpu"},
    {Comparable::megatron_model_tflops_per_gpu, "megatron_model_tflops_per_gpu"},
    {Comparable::causal_model_tflops_per_gpu, "causal_model_tflops_per_gpu"},
    {Comparable::tokens_per_s_per_gpu, "tokens_per_s_per_gpu"},
}};

const std::array<const char*, 12> kRequiredColumns = {
    "id",          "source",       "table_or_url", "model",  "gpu",        "num_gpus",
    "metric_name", "metric_value", "notes",        "config", "comparable", "tolerance"};

// Reads RFC 4180 fields one at a time.
struct CsvScanner {
  std::string_view text;
  std::size_t pos = 0;
  std::string where;

  // Reads one field starting at pos; sets `row_ends` when a newline or the end follows it.
  std::string field(bool& row_ends) {
    std::string value;
    if (pos < text.size() && text[pos] == '"') {
      value = quoted();
      if (pos < text.size() && text[pos] != ',' && text[pos] != '\n' && text[pos] != '\r') {
        throw InputError(where, "", value, "text after a closing quote");
      }
    } else {
      while (pos < text.size() && text[pos] != ',' && text[pos] != '\n') value += text[pos++];
      if (!value.empty() && value.back() == '\r') value.pop_back();
    }
    if (pos < text.size() && text[pos] == '\r') ++pos;
    row_ends = pos >= text.size() || text[pos] == '\n';
    if (pos < text.size()) ++pos;  // the comma or the newline
    return value;
  }

  std::string quoted() {
    std::string value;
    ++pos;  // opening quote
    while (true) {
      if (pos >= text.size()) throw InputError(where, "", "", "unterminated quoted field");
      if (text[pos] == '"') {
        if (pos + 1 < text.size() && text[pos + 1] == '"') {
          value += '"';
          pos += 2;
          continue;
        }
        ++pos;  // closing quote
        return value;
      }
      value += text[pos++];
    }
  }
};

double parse_number(const std::string& text, const std::string& where, const std::string& column) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value)) {
    throw InputError(where, column, text, "must be a number");
  }
  return value;
}

const std::string& cell(const std::map<std::string, std::string>& columns,
                        const std::string& name) {
  return columns.at(name);
}

}  // namespace

const char* to_string(Comparable comparable) {
  for (const auto& [value, name] : kComparableNames) {
    if (value == comparable) return name;
  }
  return "?";
}

Comparable parse_comparable(const std::string& text, const std::string& where) {
  std::string allowed;
  for (const auto& [value, name] : kComparableNames) {
    if (text == name) return value;
    allowed += (allowed.empty() ? "" : ", ") + std::string(name);
  }
  throw InputError(where, "comparable", text, "must be one of " + allowed);
}

std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& where) {
  std::vector<std::vector<std::string>> rows;
  CsvScanner scanner{text, 0, where};
  std::vector<std::string> row;
  while (scanner.pos < text.size()) {
    bool row_ends = false;
    row.push_back(scanner.field(row_ends));
    if (!row_ends) continue;
    const bool blank = row.size() == 1 && row.front().empty();
    if (!blank) rows.push_back(std::move(row));
    row.clear();
  }
  if (!row.empty()) {  // the text ended with a comma: one more, empty field
    row.emplace_back();
    rows.push_back(std::move(row));
  }
  return rows;
}

PublishedRun parse_published_run(const std::vector<std::string>& header,
                                 const std::vector<std::string>& fields, const std::string& where) {
  if (fields.size() != header.size()) {
    throw InputError(where, "", std::to_string(fields.size()) + " fields",
                     "the header has " + std::to_string(header.size()) + " columns");
  }
  PublishedRun run;
  for (std::size_t i = 0; i < header.size(); ++i) run.columns[header[i]] = fields[i];
  for (const char* name : kRequiredColumns) {
    if (!run.columns.contains(name)) throw InputError(where, name, "", "required column missing");
  }
  const std::string row_where = where + " (" + cell(run.columns, "id") + ")";
  run.id = cell(run.columns, "id");
  run.source = cell(run.columns, "source");
  run.table_or_url = cell(run.columns, "table_or_url");
  run.model = cell(run.columns, "model");
  run.gpu = cell(run.columns, "gpu");
  run.num_gpus =
      static_cast<std::int64_t>(parse_number(cell(run.columns, "num_gpus"), row_where, "num_gpus"));
  run.metric_name = cell(run.columns, "metric_name");
  run.metric_value = parse_number(cell(run.columns, "metric_value"), row_where, "metric_value");
  run.notes = cell(run.columns, "notes");
  run.config = cell(run.columns, "config");
  run.comparable = parse_comparable(cell(run.columns, "comparable"), row_where);
  run.tolerance = parse_number(cell(run.columns, "tolerance"), row_where, "tolerance");
  if (run.tolerance <= 0) {
    throw InputError(row_where, "tolerance", cell(run.columns, "tolerance"), "must be > 0");
  }
  return run;
}

std::vector<PublishedRun> load_published_runs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "", "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  const auto rows = parse_csv(text.str(), path);
  if (rows.empty()) throw InputError(path, "", "", "no header line");
  std::vector<PublishedRun> runs;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    runs.push_back(
        parse_published_run(rows.front(), rows[i], path + ": data row " + std::to_string(i)));
  }
  return runs;
}

double narayanan_eq3_flops(double batch, double seq_len, double layers, double hidden,
                           double vocab) {
  return 96.0 * batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (16.0 * layers * hidden));
}

double korthikanti_model_flops(double batch, double seq_len, double layers, double hidden,
                               double vocab) {
  return 72.0 * batch * seq_len * layers * hidden * hidden *
         (1.0 + seq_len / (6.0 * hidden) + vocab / (12.0 * hidden * layers));
}

double noncausal_model_flops(const ModelSpec& model, std::int64_t seq_len,
                             std::int64_t global_batch, std::int64_t tp) {
  return model_flops_breakdown(model, seq_len, global_batch, tp, /*causal=*/false).total();
}

double predicted_metric(const PublishedRun& row, const RunConfig& config, double iteration_time_s) {
  const auto& m = config.model;
  const double batch = static_cast<double>(config.training.global_batch);
  const double seq = static_cast<double>(config.training.seq_len);
  const double l = static_cast<double>(m.layers);
  const double h = static_cast<double>(m.hidden);
  const double v = static_cast<double>(m.vocab);
  const double gpu_seconds = iteration_time_s * static_cast<double>(config.num_gpus);
  switch (row.comparable) {
    case Comparable::iteration_time_s:
      return iteration_time_s;
    case Comparable::narayanan_eq3_tflops_per_gpu:
      return narayanan_eq3_flops(batch, seq, l, h, v) / gpu_seconds / 1e12;
    case Comparable::korthikanti_model_tflops_per_gpu:
      return korthikanti_model_flops(batch, seq, l, h, v) / gpu_seconds / 1e12;
    case Comparable::korthikanti_mfu_pct:
      return 100.0 * korthikanti_model_flops(batch, seq, l, h, v) / gpu_seconds / kA100PeakFlops;
    case Comparable::nemo_model_tflops_per_gpu:
      return noncausal_model_flops(m, config.training.seq_len, config.training.global_batch, 1) /
             gpu_seconds / 1e12;
    case Comparable::megatron_model_tflops_per_gpu:
      return noncausal_model_flops(m, config.training.seq_len, config.training.global_batch,
                                   config.layout.sizes.tp) /
             gpu_seconds / 1e12;
    case Comparable::causal_model_tflops_per_gpu:
      return iteration_flops(m, config.training, config.layout.sizes.tp, config.num_gpus)
                 .model_per_iteration /
             gpu_seconds / 1e12;
    case Comparable::tokens_per_s_per_gpu:
      return batch * seq / gpu_seconds;
  }
  return 0;
}

double relative_error(double predicted, double published) {
  return predicted / published - 1.0;
}

double mean_absolute_percentage_error(const std::vector<double>& relative_errors) {
  if (relative_errors.empty()) return 0;
  double sum = 0;
  for (double e : relative_errors) sum += std::abs(e);
  return 100.0 * sum / static_cast<double>(relative_errors.size());
}

}  // namespace wallsim::models
