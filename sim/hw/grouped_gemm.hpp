// A grouped GEMM (one kernel over several problems, e.g. the local experts of an MoE layer) as
// the single GEMM the kernel's tiles amount to.
//
// A grouped kernel runs one tile shape over every problem and schedules the tiles of all
// problems over the SMs together, so its waves are counted over all problems at once. The
// XLA sm_90 table measures exactly that for equal problems: b batched m×n×k GEMMs run within
// 1–2% of one (b·m)×n×k GEMM once m ≥ 512 (b=4 1024×1024×1024: 489.8 against 4096×1024×1024:
// 488.1 TFLOP/s; b=2 512×4096×4096: 734.7 against 1024×4096×4096: 738.5; docs/reference/
// kernels.md A2). Each problem's rows are padded to the tile, because a tile never spans two
// problems (at m = 256 the same table shows b=4 at 664.0 against 738.5: small problems cost
// more than their rows). So, for problems i sharing n:
//   rows = Σ_i ceil(m_i·batch_i / tile_m)·tile_m
//   k    = Σ_i rows_i·k_i / rows            (the weight gradient's problems differ in k)
// and the grouped GEMM is timed as one rows×n×k GEMM (its bytes stay those of the problems).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/hw/kernel_flops.hpp"

namespace wallsim {

struct GroupedGemmShape {
  std::vector<GemmShape> problems;  // every problem has the same n
};

inline double grouped_gemm_flops(const GroupedGemmShape& g) {
  double flops = 0;
  for (const GemmShape& p : g.problems) flops += gemm_flops(p);
  return flops;
}

inline double grouped_gemm_bytes(const GroupedGemmShape& g, Dtype dtype) {
  double bytes = 0;
  for (const GemmShape& p : g.problems) bytes += gemm_bytes(p, dtype);
  return bytes;
}

// The single GEMM above; problems with no rows or no k are skipped. std::invalid_argument when
// the problems' n differ.
inline GemmShape fold_grouped_gemm(const GroupedGemmShape& g, std::int64_t tile_m) {
  std::int64_t rows = 0;
  double row_k = 0;
  for (const GemmShape& p : g.problems) {
    if (p.n != g.problems.front().n) throw std::invalid_argument("grouped GEMM n must agree");
    if (p.m * p.batch <= 0 || p.k <= 0) continue;
    const std::int64_t padded = (p.m * p.batch + tile_m - 1) / tile_m * tile_m;
    rows += padded;
    row_k += static_cast<double>(padded) * static_cast<double>(p.k);
  }
  if (rows == 0) return {0, g.problems.empty() ? 0 : g.problems.front().n, 0};
  const auto k = static_cast<std::int64_t>(std::llround(row_k / static_cast<double>(rows)));
  return {rows, g.problems.front().n, k};
}

// The mean problem of a grouped kernel, in the coordinates of a measured grouped table
// (GemmEfficiency::grouped_measured): m = rows per problem (m·batch) averaged over the problems
// with work, n, and the rows-weighted mean k (the weight gradient's problems differ in k);
// `problems` counts them. Problems with no rows or no k are skipped, as in fold_grouped_gemm.
struct MeanGroupedProblem {
  double m = 0;
  double n = 0;
  double k = 0;
  int problems = 0;
};

inline MeanGroupedProblem mean_grouped_problem(const GroupedGemmShape& g) {
  MeanGroupedProblem mean;
  double rows = 0, row_k = 0;
  for (const GemmShape& p : g.problems) {
    if (p.n != g.problems.front().n) throw std::invalid_argument("grouped GEMM n must agree");
    if (p.m * p.batch <= 0 || p.k <= 0) continue;
    const double r = static_cast<double>(p.m) * static_cast<double>(p.batch);
    rows += r;
    row_k += r * static_cast<double>(p.k);
    ++mean.problems;
  }
  if (mean.problems == 0) return mean;
  mean.m = rows / mean.problems;
  mean.n = static_cast<double>(g.problems.front().n);
  mean.k = row_k / rows;
  return mean;
}

}  // namespace wallsim
