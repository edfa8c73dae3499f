#include "sim/hw/gemm_table.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace wallsim {
namespace {

double log2_time(double m, double n, double k, double flops_per_s) {
  return std::log2(2.0 * m * n * k / flops_per_s);
}

std::vector<double> distinct(const std::vector<MeasuredGemm>& points, double MeasuredGemm::*dim) {
  std::vector<double> values;
  for (const MeasuredGemm& p : points) values.push_back(p.*dim);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Index of the cell's lower node and the position u in [0, 1] of `value` inside the cell, in
// log2; `value` is already clamped to the axis.
std::pair<std::size_t, double> locate(const std::vector<double>& axis, double value) {
  if (axis.size() == 1) return {0, 0.0};
  const auto upper = std::upper_bound(axis.begin(), axis.end(), value);
  std::size_t lo = static_cast<std::size_t>(upper - axis.begin());
  lo = std::min(lo == 0 ? 0 : lo - 1, axis.size() - 2);
  const double u = std::log2(value / axis[lo]) / std::log2(axis[lo + 1] / axis[lo]);
  return {lo, std::clamp(u, 0.0, 1.0)};
}

void check_points(const std::vector<MeasuredGemm>& points) {
  if (points.empty()) throw std::invalid_argument("GemmTable needs at least one point");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const MeasuredGemm& p = points[i];
    if (!(p.m > 0 && p.n > 0 && p.k > 0 && p.flops_per_s > 0)) {
      throw std::invalid_argument("GemmTable values must be > 0");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (points[j].m == p.m && points[j].n == p.n && points[j].k == p.k) {
        throw std::invalid_argument("GemmTable shapes must not repeat");
      }
    }
  }
}

}  // namespace

double gemm_idw_weight(const MeasuredGemm& a, double m, double n, double k) {
  const double dm = std::log2(m / a.m), dn = std::log2(n / a.n), dk = std::log2(k / a.k);
  const double d2 = dm * dm + dn * dn + dk * dk;
  return d2 > 0 ? 1.0 / (d2 * d2) : std::numeric_limits<double>::infinity();
}

double log_lerp(double lo, double hi, double u) {
  return lo + u * (hi - lo);
}

bool measured_times_consistent(const std::vector<MeasuredGemm>& points) {
  for (const MeasuredGemm& a : points) {
    for (const MeasuredGemm& b : points) {
      const bool smaller = a.m <= b.m && a.n <= b.n && a.k <= b.k;
      if (smaller &&
          log2_time(a.m, a.n, a.k, a.flops_per_s) > log2_time(b.m, b.n, b.k, b.flops_per_s)) {
        return false;
      }
    }
  }
  return true;
}

GemmTable::GemmTable(std::vector<MeasuredGemm> points, double best_flops, std::string source)
    : points_(std::move(points)), best_flops_(best_flops), source_(std::move(source)) {
  check_points(points_);
  if (!(best_flops_ > 0)) throw std::invalid_argument("GemmTable best_flops must be > 0");
  axis_[0] = distinct(points_, &MeasuredGemm::m);
  axis_[1] = distinct(points_, &MeasuredGemm::n);
  axis_[2] = distinct(points_, &MeasuredGemm::k);
  fill_grid();
}

std::size_t GemmTable::node(std::size_t i, std::size_t j, std::size_t l) const {
  return (i * axis_[1].size() + j) * axis_[2].size() + l;
}

void GemmTable::fill_grid() {
  const std::size_t nm = axis_[0].size(), nn = axis_[1].size(), nk = axis_[2].size();
  log2_t_.assign(nm * nn * nk, 0.0);
  std::vector<bool> measured(log2_t_.size(), false);
  // gemm_idw_weight's distance with the logarithms taken once per axis value and per point
  // (a grid of ~40,000 nodes over ~400 points would otherwise take 64 M logarithms).
  struct LogPoint {
    double m, n, k, rate;
  };
  std::vector<LogPoint> logs;
  logs.reserve(points_.size());
  for (const MeasuredGemm& p : points_) {
    logs.push_back({std::log2(p.m), std::log2(p.n), std::log2(p.k), std::log2(p.flops_per_s)});
  }
  std::array<std::vector<double>, 3> log_axis;
  for (std::size_t a = 0; a < 3; ++a) {
    for (const double v : axis_[a]) log_axis[a].push_back(std::log2(v));
  }
  for (std::size_t i = 0; i < nm; ++i) {
    for (std::size_t j = 0; j < nn; ++j) {
      for (std::size_t l = 0; l < nk; ++l) {
        double weights = 0, weighted_log_rate = 0;
        for (const LogPoint& p : logs) {
          const double dm = log_axis[0][i] - p.m, dn = log_axis[1][j] - p.n;
          const double dk = log_axis[2][l] - p.k;
          const double d2 = dm * dm + dn * dn + dk * dk;
          if (d2 == 0) {
            measured[node(i, j, l)] = true;
            weights = 1;
            weighted_log_rate = p.rate;
            break;
          }
          const double w = 1.0 / (d2 * d2);
          weights += w;
          weighted_log_rate += w * p.rate;
        }
        log2_t_[node(i, j, l)] = log2_time(axis_[0][i], axis_[1][j], axis_[2][l],
                                           std::exp2(weighted_log_rate / weights));
      }
    }
  }
  make_monotone(measured);
}

void GemmTable::make_monotone(const std::vector<bool>& measured) {
  const std::size_t nm = axis_[0].size(), nn = axis_[1].size(), nk = axis_[2].size();
  for (std::size_t i = nm; i-- > 0;) {
    for (std::size_t j = nn; j-- > 0;) {
      for (std::size_t l = nk; l-- > 0;) {
        double& t = log2_t_[node(i, j, l)];
        if (measured[node(i, j, l)]) continue;
        if (i + 1 < nm) t = std::min(t, log2_t_[node(i + 1, j, l)]);
        if (j + 1 < nn) t = std::min(t, log2_t_[node(i, j + 1, l)]);
        if (l + 1 < nk) t = std::min(t, log2_t_[node(i, j, l + 1)]);
      }
    }
  }
  for (std::size_t i = 0; i < nm; ++i) {
    for (std::size_t j = 0; j < nn; ++j) {
      for (std::size_t l = 0; l < nk; ++l) {
        double& t = log2_t_[node(i, j, l)];
        if (i > 0) t = std::max(t, log2_t_[node(i - 1, j, l)]);
        if (j > 0) t = std::max(t, log2_t_[node(i, j - 1, l)]);
        if (l > 0) t = std::max(t, log2_t_[node(i, j, l - 1)]);
      }
    }
  }
}

double GemmTable::grid_log2_time(double m, double n, double k) const {
  // Plain variables, not structured bindings: lambdas below capture them.
  const std::pair<std::size_t, double> at_m = locate(axis_[0], m);
  const std::pair<std::size_t, double> at_n = locate(axis_[1], n);
  const std::pair<std::size_t, double> at_k = locate(axis_[2], k);
  const std::size_t i = at_m.first, j = at_n.first, l = at_k.first;
  const double um = at_m.second, un = at_n.second, uk = at_k.second;
  const auto at = [&](std::size_t di, std::size_t dj, std::size_t dl) {
    const std::size_t ii = std::min(i + di, axis_[0].size() - 1);
    const std::size_t jj = std::min(j + dj, axis_[1].size() - 1);
    const std::size_t ll = std::min(l + dl, axis_[2].size() - 1);
    return log2_t_[node(ii, jj, ll)];
  };
  const auto along_k = [&](std::size_t di, std::size_t dj) {
    return log_lerp(at(di, dj, 0), at(di, dj, 1), uk);
  };
  const auto along_n = [&](std::size_t di) { return log_lerp(along_k(di, 0), along_k(di, 1), un); };
  return log_lerp(along_n(0), along_n(1), um);
}

double GemmTable::compute_s(double m, double n, double k) const {
  if (!(m > 0 && n > 0 && k > 0)) return 0.0;
  const auto clamp = [](const std::vector<double>& axis, double v) {
    return std::clamp(v, axis.front(), axis.back());
  };
  const double mc = clamp(axis_[0], m), nc = clamp(axis_[1], n), kc = clamp(axis_[2], k);
  const double scale = (m / mc) * (n / nc) * (k / kc);
  double t = std::exp2(grid_log2_time(mc, nc, kc)) * scale;
  if (m > axis_[0].back() || n > axis_[1].back() || k > axis_[2].back()) {
    t = std::max(t, 2.0 * m * n * k / best_flops_);
  }
  return t;
}

double GemmTable::flops_per_s(double m, double n, double k) const {
  return 2.0 * m * n * k / compute_s(m, n, k);
}

bool GemmTable::waves_unmeasured(double m, double n) const {
  return m >= axis_[0].front() && (m > axis_[0].back() || n > axis_[1].back());
}

std::vector<double> gemm_leave_one_out_errors(const std::vector<MeasuredGemm>& points,
                                              double best_flops) {
  std::vector<double> errors;
  if (points.size() < 2) return errors;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<MeasuredGemm> others = points;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(i));
    const GemmTable table(std::move(others), best_flops, "leave-one-out");
    const MeasuredGemm& p = points[i];
    errors.push_back(table.flops_per_s(p.m, p.n, p.k) / p.flops_per_s - 1.0);
  }
  return errors;
}

}  // namespace wallsim
