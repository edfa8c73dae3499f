// GemmTable: a GEMM's compute time on a whole GPU by shape, from measured (M, N, K) → FLOP/s.
//
// M counts output rows with any batch folded in (b·m), as the XLA sm_90 table's "rows" column
// (docs/reference/kernels.md A2); that table's batched rows (b = 2, 4) run within 1% of one GEMM
// of as many rows (b=4 1024×1024×1024: 489.8 against 4096×1024×1024: 488.1 TFLOP/s). Coordinates
// are x = (log2 M, log2 N, log2 K); time t = F / R with F = 2·M·N·K and R the FLOP/s.
//
// Build, once, when the profile is read:
//  1. Grid. The axes are the distinct M, N and K values of the points. A measured node holds its
//     measured time.
//  2. Fill. A node nobody measured takes log2 R = Σ w_i·log2 R_i / Σ w_i over the measured points
//     i, w_i = 1 / |x − x_i|⁴ (inverse-distance weighting, Shepard 1968), so t = F / R. The
//     fourth power keeps the fill local: over the sm_90 seeds it halves the median
//     leave-one-out error of the square (5.5% against 9.8%).
//  3. Monotone. In decreasing grid order each filled node is lowered to the least time of its
//     upper neighbours; then in increasing order every node is raised to the largest time of its
//     lower neighbours. Afterwards time never falls along an axis, and a measured node keeps its
//     time whenever no measured shape smaller or equal in every dimension took longer (true of
//     every shipped table; `measured_times_consistent` checks it).
// Query (M, N, K):
//  4. Inside the grid, log2 t is multilinear in x over the enclosing cell. That is exact at the
//     nodes, and non-decreasing along each axis, because the derivative along an axis is a convex
//     combination of the cell's edge differences along it, all >= 0 after step 3.
//  5. Outside the grid the coordinates are clamped and the clamped shape's FLOP/s is kept:
//     t = t(clamped) · F / F(clamped). Past the largest measured value time grows in proportion;
//     below the smallest it falls in proportion at the smallest shape's rate. Such small GEMMs
//     (few rows through a large weight) are memory-bound: GpuModel takes the larger of this time
//     and the HBM time of the bytes, and that floor is what they pay.
//  6. Above the grid in any dimension the rate is capped at `best_flops` (the MAMF best shape,
//     kernels.md A1): t = max(t, F / best_flops). Inside the grid measured points stay exact,
//     even where a measurement exceeds the MAMF figure.
// Each step keeps time non-decreasing in every dimension, so the composition does too.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace wallsim {

struct MeasuredGemm {
  double m;  // rows, batch folded in
  double n;
  double k;
  double flops_per_s;  // achieved
};

// 1 / |a − b|⁴ in log2 coordinates; the fill's weight (step 2). Infinite when a == b.
double gemm_idw_weight(const MeasuredGemm& a, double m, double n, double k);

// Linear interpolation of log2 t between two nodes; `u` in [0, 1] is the position in log2 of
// the coordinate between them (step 4, one axis at a time).
double log_lerp(double lo, double hi, double u);

// No measured shape that is smaller or equal in every dimension took longer than a larger one.
bool measured_times_consistent(const std::vector<MeasuredGemm>& points);

class GemmTable {
 public:
  GemmTable() = default;
  // std::invalid_argument when empty, a value is not positive or a shape repeats (profile
  // parsers check this first and report the JSON path).
  GemmTable(std::vector<MeasuredGemm> points, double best_flops, std::string source);

  // Compute time in seconds of a GEMM of m (rows) × n × k on the whole GPU; 0 when a dimension
  // is 0.
  double compute_s(double m, double n, double k) const;
  double flops_per_s(double m, double n, double k) const;
  // m or n larger than any measured, with m at least the smallest measured: the table knows
  // nothing of the waves there. (Below the smallest m a GEMM is skinny and memory-bound, and
  // its kernels use small tiles or split K, so whole 128-row tiles would overcharge it.)
  bool waves_unmeasured(double m, double n) const;

  const std::vector<MeasuredGemm>& points() const { return points_; }
  const std::string& source() const { return source_; }
  double best_flops() const { return best_flops_; }

 private:
  std::size_t node(std::size_t i, std::size_t j, std::size_t l) const;
  void fill_grid();
  void make_monotone(const std::vector<bool>& measured);
  double grid_log2_time(double m, double n, double k) const;

  std::vector<MeasuredGemm> points_;
  double best_flops_ = 0;
  std::string source_;
  std::vector<double> axis_[3];  // distinct m, n, k values, increasing
  std::vector<double> log2_t_;   // per node, seconds
};

// Leave-one-out: for each point, the relative error of the rate a table built from the other
// points predicts for its shape, (predicted − measured) / measured.
std::vector<double> gemm_leave_one_out_errors(const std::vector<MeasuredGemm>& points,
                                              double best_flops);

}  // namespace wallsim
