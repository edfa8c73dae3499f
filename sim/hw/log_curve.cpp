#include "sim/hw/log_curve.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace wallsim {

LogCurve::LogCurve(std::vector<CurvePoint> points) : points_(std::move(points)) {
  if (points_.empty()) throw std::invalid_argument("LogCurve needs at least one point");
  for (std::size_t i = 0; i < points_.size(); ++i) {
    if (!(points_[i].x > 0)) throw std::invalid_argument("LogCurve x must be > 0");
    if (i > 0 && !(points_[i].x > points_[i - 1].x)) {
      throw std::invalid_argument("LogCurve x must be strictly increasing");
    }
  }
}

double LogCurve::at(double x) const {
  if (points_.empty()) throw std::logic_error("LogCurve::at on an empty curve");
  if (x <= points_.front().x) return points_.front().y;
  if (x >= points_.back().x) return points_.back().y;
  // First point with x above the query; the one before it is at or below.
  const auto upper =
      std::upper_bound(points_.begin(), points_.end(), x,
                       [](double value, const CurvePoint& p) { return value < p.x; });
  const auto lower = upper - 1;
  const double t = std::log2(x / lower->x) / std::log2(upper->x / lower->x);
  return lower->y + t * (upper->y - lower->y);
}

}  // namespace wallsim
