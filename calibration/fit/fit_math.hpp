// Small numerical building blocks of the calibration fits (pure functions).
#pragma once

#include <vector>

#include "sim/hw/log_curve.hpp"

namespace wallsim {

// Quantile q in [0, 1] of `values` with linear interpolation between order statistics
// (type 7 of Hyndman & Fan, the default of R and NumPy). std::invalid_argument when empty.
double quantile(std::vector<double> values, double q);
inline double median(std::vector<double> values) {
  return quantile(std::move(values), 0.5);
}

// Least-squares isotonic (non-decreasing) fit of `values` with equal weights: the
// pool-adjacent-violators algorithm (Ayer et al. 1955; Barlow et al., "Statistical Inference
// under Order Restrictions", 1972). Returns one value per input.
std::vector<double> isotonic_non_decreasing(const std::vector<double>& values);

// y ≈ intercept + slope·x minimising Σ ((y_i − ŷ_i) / y_i)², the relative error: bench times
// span decades, so an absolute fit would ignore every small point. Solved with Eigen's
// column-pivoting Householder QR on the weighted normal-free system. Needs two distinct x and
// y_i > 0; std::invalid_argument otherwise.
struct LineFit {
  double intercept = 0;
  double slope = 0;
};
LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& y);

// Groups samples (x > 0) into bins of round(log2 x) and gives, per bin in increasing order,
// x = 2^(mean log2 x of the bin) and y = the median y of the bin.
std::vector<CurvePoint> median_by_log2_bin(const std::vector<CurvePoint>& samples);

// A curve of efficiencies made non-decreasing in x (isotonic_non_decreasing on y) and clamped
// to [floor, 1].
std::vector<CurvePoint> monotone_efficiency(std::vector<CurvePoint> curve, double floor = 1e-6);

// A curve of efficiencies made non-decreasing in x by capping each point at every later
// point's value (the lower envelope from the right) and clamped to [floor, 1]. Unlike the
// isotonic fit, a bump at middle x (transfers that stay in the L2 cache when repeated) cannot
// lift the large-x end, which keeps its measured value.
std::vector<CurvePoint> capped_by_larger(std::vector<CurvePoint> curve, double floor = 1e-6);

// Relative error of a prediction against a measurement: (predicted − measured) / measured.
inline double relative_error(double predicted, double measured) {
  return (predicted - measured) / measured;
}

}  // namespace wallsim
