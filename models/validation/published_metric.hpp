// Published training measurements and wallsim's prediction of each, in the source's own
// FLOP convention.
//
// configs/validation/published_runs.csv holds the rows of docs/reference/published.csv that
// wallsim can express (dense, cp = 1), each with its citation, the run config that reproduces
// its layout (`config`), what wallsim value its metric compares with (`comparable`) and the
// relative tolerance the validation test allows (`tolerance`). Every source counts FLOP/s its
// own way (published.md, "FLOP-counting conventions"), so the predicted iteration time t is
// converted into the row's metric with that source's formula, never with wallsim's own count:
//
//   iteration_time_s                t as is
//   narayanan_eq3_tflops_per_gpu    Narayanan et al. 2021 Eq. 3 (full recompute, 4 GEMM passes):
//                                   96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)) / (t · GPUs)
//   korthikanti_model_tflops_per_gpu  Korthikanti et al. 2022 model FLOPs (no recompute):
//                                   72·B·s·l·h²·(1 + s/(6h) + V/(12·h·l)) / (t · GPUs)
//   korthikanti_mfu_pct             the same over the A100's 312 TFLOP/s, in percent
//   nemo_model_tflops_per_gpu       NeMo 24.07's "Model TFLOP/sec/GPU": GEMM FLOPs with full
//                                   (non-causal) s² attention, GQA and SwiGLU aware, no recompute
//   megatron_model_tflops_per_gpu   Megatron-LM r0.8.0's num_floating_point_operations (2024):
//                                   the same non-causal count, padded vocabulary
//   causal_model_tflops_per_gpu     Megatron-Core's current num_floating_point_operations (causal
//                                   attention halved; MoE, MLA and MTP terms), the model FLOPs
//                                   `wallsim flops` prints; NeMo/Megatron-Bridge count the same
//   tokens_per_s_per_gpu            B·s / (t · GPUs)
//
// B = global batch, s = sequence length, l = layers, h = hidden, V = vocabulary.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/model_spec.hpp"
#include "models/run_config.hpp"

namespace wallsim::models {

enum class Comparable {
  iteration_time_s,
  narayanan_eq3_tflops_per_gpu,
  korthikanti_model_tflops_per_gpu,
  korthikanti_mfu_pct,
  nemo_model_tflops_per_gpu,
  megatron_model_tflops_per_gpu,
  causal_model_tflops_per_gpu,
  tokens_per_s_per_gpu,
};

const char* to_string(Comparable comparable);

// Parses a `comparable` cell; InputError naming `where`, the value and the allowed names.
Comparable parse_comparable(const std::string& text, const std::string& where);

// One row of published_runs.csv.
struct PublishedRun {
  std::string id;
  std::string source;        // the paper or vendor table
  std::string table_or_url;  // where in it
  std::string model;         // model name as the source writes it
  std::string gpu;
  std::int64_t num_gpus = 0;
  std::string metric_name;  // as in published.csv (e.g. achieved_tflops_per_gpu)
  double metric_value = 0;
  std::string notes;
  std::string config;  // run config path (relative to the CSV file, then the data root)
  Comparable comparable = Comparable::iteration_time_s;
  double tolerance = 0.15;                     // allowed |predicted/published - 1|
  std::map<std::string, std::string> columns;  // every column as written
};

// RFC 4180 CSV: fields separated by commas, a field in double quotes may hold commas, newlines
// and doubled quotes (""). Rows are split on \n (a trailing \r is dropped); empty lines are
// skipped. InputError (naming `where`) on an unterminated quote.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& where);

// One data row against the header. Required columns: id, source, table_or_url, model, gpu,
// num_gpus, metric_name, metric_value, notes, config, comparable, tolerance.
PublishedRun parse_published_run(const std::vector<std::string>& header,
                                 const std::vector<std::string>& fields, const std::string& where);

// Reads the whole file (first line: header).
std::vector<PublishedRun> load_published_runs(const std::string& path);

// Narayanan et al. 2021 (arXiv:2104.04473) Eq. 3: FLOPs of one iteration with full activation
// recomputation, 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
double narayanan_eq3_flops(double batch, double seq_len, double layers, double hidden,
                           double vocab);

// Korthikanti et al. 2022 (arXiv:2205.05198) §6: model FLOPs of one iteration (no recompute),
// 72·B·s·l·h²·(1 + s/(6h) + V/(12·h·l)).
double korthikanti_model_flops(double batch, double seq_len, double layers, double hidden,
                               double vocab);

// GEMM FLOPs of one iteration with full (non-causal) s² attention, as NeMo 24.07's tables and
// Megatron-LM's 2024 counter count them (models/flops.hpp with causal = false). NeMo uses the
// unpadded vocabulary (tp = 1 here; every NeMo vocabulary in the table is a multiple of 128),
// Megatron the vocabulary padded to 128·tp.
double noncausal_model_flops(const ModelSpec& model, std::int64_t seq_len,
                             std::int64_t global_batch, std::int64_t tp);

// A100 16-bit dense peak that Narayanan and Korthikanti divide by (published.md).
inline constexpr double kA100PeakFlops = 312e12;

// Converts a predicted iteration time into the row's metric, in the source's convention. The
// shape comes from `config` (the row's run config).
double predicted_metric(const PublishedRun& row, const RunConfig& config, double iteration_time_s);

// predicted / published − 1.
double relative_error(double predicted, double published);

// Mean of |relative error| in percent (0 for no rows).
double mean_absolute_percentage_error(const std::vector<double>& relative_errors);

}  // namespace wallsim::models
