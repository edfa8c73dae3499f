#include "sim/hw/log_curve.hpp"

#include <stdexcept>
#include <vector>

#include <catch2/catch.hpp>

using wallsim::LogCurve;

TEST_CASE("a log curve is linear in log2(x) between its points", "[hw][log_curve]") {
  const LogCurve curve({{1024, 0.2}, {4096, 0.6}});
  // 2048 is halfway between 2^10 and 2^12 in log2, so y is halfway too.
  CHECK(curve.at(2048) == Approx(0.4));
  CHECK(curve.at(1024) == Approx(0.2));
  CHECK(curve.at(4096) == Approx(0.6));
}

TEST_CASE("a log curve is flat beyond its first and last points", "[hw][log_curve]") {
  const LogCurve curve({{10, 1.0}, {100, 3.0}});
  CHECK(curve.at(1) == Approx(1.0));
  CHECK(curve.at(0) == Approx(1.0));
  CHECK(curve.at(1e9) == Approx(3.0));
}

TEST_CASE("a log curve rejects unordered or non-positive x", "[hw][log_curve]") {
  CHECK_THROWS_AS(LogCurve({{10, 1.0}, {10, 2.0}}), std::invalid_argument);
  CHECK_THROWS_AS(LogCurve({{0, 1.0}}), std::invalid_argument);
  CHECK_THROWS_AS(LogCurve(std::vector<wallsim::CurvePoint>{}), std::invalid_argument);
}
