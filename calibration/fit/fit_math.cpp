#include "calibration/fit/fit_math.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <Eigen/Dense>

namespace wallsim {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("quantile of no values");
  std::sort(values.begin(), values.end());
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(values.size() - 1);
  const auto lower = static_cast<std::size_t>(std::floor(position));
  const std::size_t upper = std::min(lower + 1, values.size() - 1);
  const double fraction = position - static_cast<double>(lower);
  return values[lower] + fraction * (values[upper] - values[lower]);
}

std::vector<double> isotonic_non_decreasing(const std::vector<double>& values) {
  struct Block {
    double sum;
    int count;
    double mean() const { return sum / count; }
  };
  std::vector<Block> blocks;
  for (double v : values) {
    blocks.push_back({v, 1});
    // Merge backwards while the order is violated; each merge replaces two blocks by their mean.
    while (blocks.size() > 1 && blocks[blocks.size() - 2].mean() > blocks.back().mean()) {
      Block last = blocks.back();
      blocks.pop_back();
      blocks.back().sum += last.sum;
      blocks.back().count += last.count;
    }
  }
  std::vector<double> out;
  for (const Block& block : blocks) out.insert(out.end(), block.count, block.mean());
  return out;
}

LineFit fit_line_relative(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) {
    throw std::invalid_argument("fit_line_relative needs at least two (x, y) pairs");
  }
  const auto n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    if (!(y[i] > 0)) throw std::invalid_argument("fit_line_relative needs y > 0");
    // Row i of the weighted system: (1/y_i)·[1, x_i]·[c, s]ᵀ = 1.
    a(i, 0) = 1.0 / y[i];
    a(i, 1) = x[i] / y[i];
    b(i) = 1.0;
  }
  // Scale the slope column so both columns have comparable norms (x spans decades).
  const double scale = a.col(1).norm() / a.col(0).norm();
  if (!(scale > 0)) throw std::invalid_argument("fit_line_relative needs two distinct x");
  a.col(1) /= scale;
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(a);
  if (qr.rank() < 2) throw std::invalid_argument("fit_line_relative needs two distinct x");
  const Eigen::Vector2d solution = qr.solve(b);
  return {solution(0), solution(1) / scale};
}

std::vector<CurvePoint> median_by_log2_bin(const std::vector<CurvePoint>& samples) {
  std::map<long, std::vector<CurvePoint>> bins;
  for (const CurvePoint& s : samples) {
    if (!(s.x > 0)) throw std::invalid_argument("median_by_log2_bin needs x > 0");
    bins[std::lround(std::log2(s.x))].push_back(s);
  }
  std::vector<CurvePoint> out;
  for (const auto& [bin, members] : bins) {
    double log_sum = 0;
    std::vector<double> ys;
    for (const CurvePoint& s : members) {
      log_sum += std::log2(s.x);
      ys.push_back(s.y);
    }
    out.push_back({std::exp2(log_sum / static_cast<double>(members.size())), median(ys)});
  }
  return out;
}

std::vector<CurvePoint> monotone_efficiency(std::vector<CurvePoint> curve, double floor) {
  std::vector<double> ys;
  for (const CurvePoint& p : curve) ys.push_back(p.y);
  ys = isotonic_non_decreasing(ys);
  for (std::size_t i = 0; i < curve.size(); ++i) curve[i].y = std::clamp(ys[i], floor, 1.0);
  return curve;
}

std::vector<CurvePoint> capped_by_larger(std::vector<CurvePoint> curve, double floor) {
  for (std::size_t i = curve.size(); i-- > 0;) {
    if (i + 1 < curve.size()) curve[i].y = std::min(curve[i].y, curve[i + 1].y);
    curve[i].y = std::clamp(curve[i].y, floor, 1.0);
  }
  return curve;
}

}  // namespace wallsim
