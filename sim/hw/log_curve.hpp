// A measured curve y(x) over a quantity that spans decades (FLOPs, bytes, sequence length).
//
// Between its points the curve is linear in log2(x); beyond the first and last point it is
// flat (the nearest measurement is the best guess, and extrapolating a fitted slope outside
// the measured range would invent data). Efficiency tables in GPU profiles are LogCurves.
#pragma once

#include <vector>

namespace wallsim {

struct CurvePoint {
  double x;
  double y;
};

class LogCurve {
 public:
  LogCurve() = default;
  // Needs at least one point, every x > 0 and x strictly increasing; std::invalid_argument
  // otherwise (profile parsers check this first and report the JSON path).
  explicit LogCurve(std::vector<CurvePoint> points);

  // y at x; x <= 0 reads the first point.
  double at(double x) const;
  const std::vector<CurvePoint>& points() const { return points_; }

 private:
  std::vector<CurvePoint> points_;
};

}  // namespace wallsim
