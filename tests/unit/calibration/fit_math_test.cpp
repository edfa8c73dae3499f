#include <catch2/catch.hpp>

#include "calibration/fit/fit_math.hpp"

using namespace wallsim;

TEST_CASE("quantile interpolates between order statistics (type 7)") {
  // Sorted {1, 2, 3, 4}: position q·(n−1); q = 0.5 -> 1.5 -> 2.5; q = 0.8 -> 2.4 -> 3.4.
  CHECK(quantile({4, 1, 3, 2}, 0.5) == Approx(2.5));
  CHECK(quantile({4, 1, 3, 2}, 0.8) == Approx(3.4));
  CHECK(quantile({7}, 0.9) == 7);
  CHECK(median({5, 1, 3}) == 3);
  CHECK_THROWS_AS(quantile({}, 0.5), std::invalid_argument);
}

TEST_CASE("isotonic fit pools adjacent violators into their mean") {
  // 1, 3, 2, 4: the violating pair (3, 2) becomes 2.5, 2.5; already sorted data is unchanged.
  CHECK(isotonic_non_decreasing({1, 3, 2, 4}) == std::vector<double>{1, 2.5, 2.5, 4});
  CHECK(isotonic_non_decreasing({1, 2, 3}) == std::vector<double>{1, 2, 3});
  // 3, 2, 1: one block, mean 2.
  CHECK(isotonic_non_decreasing({3, 2, 1}) == std::vector<double>{2, 2, 2});
}

TEST_CASE("relative least squares recovers an exact line over decades of x") {
  // t = 5 µs + bytes / 3e12 B/s, bytes from 0 to 4 GB: exact data, exact answer.
  std::vector<double> x, y;
  for (double bytes : {0.0, 1e3, 1e6, 1e9, 4e9}) {
    x.push_back(bytes);
    y.push_back(5e-6 + bytes / 3e12);
  }
  const LineFit line = fit_line_relative(x, y);
  CHECK(line.intercept == Approx(5e-6).epsilon(1e-9));
  CHECK(1 / line.slope == Approx(3e12).epsilon(1e-9));
  CHECK_THROWS_AS(fit_line_relative({1, 1}, {2, 3}), std::invalid_argument);
}

TEST_CASE("samples are binned by rounded log2 with the median per bin") {
  // 1000 and 1100 round to log2 10 (1024); 4000 to 12. Bin x is 2^(mean log2).
  const auto bins = median_by_log2_bin({{1000, 1}, {1100, 3}, {4000, 5}, {1050, 2}});
  REQUIRE(bins.size() == 2);
  CHECK(bins[0].y == 2);
  CHECK(bins[0].x == Approx(std::cbrt(1000.0 * 1100 * 1050)));
  CHECK(bins[1].y == 5);
}

TEST_CASE("an efficiency curve is made non-decreasing and capped at 1") {
  const auto curve = monotone_efficiency({{1, 0.5}, {2, 0.4}, {4, 1.05}, {8, 1.01}});
  CHECK(curve[0].y == Approx(0.45));
  CHECK(curve[1].y == Approx(0.45));
  CHECK(curve[2].y == 1.0);
  CHECK(curve[3].y == 1.0);
}

TEST_CASE("a cache bump does not lift the large end of an HBM curve") {
  // Bins 3 and 4 are transfers that stay in L2 when repeated (0.95 of HBM peak); large ones
  // stream at 0.83. Capped by every larger bin, the bump comes down to 0.83 and the large end
  // keeps its value; pooling adjacent violators would have averaged the bump into it
  // ((0.95 + 0.95 + 0.83 + 0.83) / 4 = 0.89).
  const auto curve =
      capped_by_larger({{1, 0.2}, {2, 0.6}, {3, 0.95}, {4, 0.95}, {5, 0.83}, {6, 0.83}});
  CHECK(curve[0].y == 0.2);
  CHECK(curve[1].y == 0.6);
  CHECK(curve[2].y == 0.83);
  CHECK(curve[3].y == 0.83);
  CHECK(curve[5].y == 0.83);
  CHECK(monotone_efficiency({{3, 0.95}, {4, 0.95}, {5, 0.83}, {6, 0.83}})[3].y == Approx(0.89));
  // Clamped to [floor, 1] like the isotonic curve.
  CHECK(capped_by_larger({{1, 1e-9}, {2, 1.2}})[0].y == 1e-6);
  CHECK(capped_by_larger({{1, 1e-9}, {2, 1.2}})[1].y == 1.0);
}
