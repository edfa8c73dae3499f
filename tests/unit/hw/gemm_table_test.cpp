#include "sim/hw/gemm_table.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "shipped_profile.hpp"

using namespace wallsim;

namespace {

constexpr double kT = 1e12;

// Two points along m: 1024×1024×1024 at 200 TFLOP/s and 2048×1024×1024 at 300 TFLOP/s.
GemmTable two_along_m(double best_tflops = 1000) {
  return GemmTable({{1024, 1024, 1024, 200 * kT}, {2048, 1024, 1024, 300 * kT}}, best_tflops * kT,
                   "test");
}

double percentile(std::vector<double> values, double q) {
  for (double& v : values) v = std::abs(v);
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
}

}  // namespace

TEST_CASE("a measured shape reads back its measured rate", "[hw][gemm_table]") {
  const GemmTable table = two_along_m();
  CHECK(table.flops_per_s(1024, 1024, 1024) == Approx(200 * kT).epsilon(1e-12));
  CHECK(table.flops_per_s(2048, 1024, 1024) == Approx(300 * kT).epsilon(1e-12));
}

TEST_CASE("between two points log2 time is linear in log2 m", "[hw][gemm_table]") {
  // t1 = 2·1024³ / 200T, t2 = 2·2048·1024² / 300T = (4/3)·t1. Halfway in log2 (m = 1024·√2):
  // t = t1·(4/3)^½ and F = √2·F1, so R = √2·200/√(4/3) = √(200·300) = 244.95 TFLOP/s.
  const double m = 1024 * std::sqrt(2.0);
  CHECK(two_along_m().flops_per_s(m, 1024, 1024) == Approx(std::sqrt(200.0 * 300.0) * kT));
}

TEST_CASE("outside the table the nearest rate holds, capped at the best shape above it",
          "[hw][gemm_table]") {
  // Below the smallest m: the 1024-row rate, time halving with m.
  CHECK(two_along_m().flops_per_s(512, 1024, 1024) == Approx(200 * kT));
  // Above the largest m: the 2048-row rate (300) unless the best shape's rate is lower.
  CHECK(two_along_m().flops_per_s(8192, 1024, 1024) == Approx(300 * kT));
  CHECK(two_along_m(250).flops_per_s(8192, 1024, 1024) == Approx(250 * kT));
  // Inside the table a measurement above the best-shape figure stays exact.
  CHECK(two_along_m(250).flops_per_s(2048, 1024, 1024) == Approx(300 * kT));
}

TEST_CASE("a node nobody measured takes the inverse-distance-weighted log rate",
          "[hw][gemm_table]") {
  // Grid m ∈ {1024, 2048}, n ∈ {1024, 2048}, k = 1024; (2048, 2048) missing. Its distances in
  // log2 to (2048,1024), (1024,2048) and (1024,1024) are 1, 1 and √2: weights 1, 1, 1/4.
  // log2 R = (log2 300 + log2 300 + log2 100 / 4) / 2.25 → R = (300²·100^¼)^(1/2.25).
  const GemmTable table(
      {{1024, 1024, 1024, 100 * kT}, {2048, 1024, 1024, 300 * kT}, {1024, 2048, 1024, 300 * kT}},
      1000 * kT, "test");
  const double expected = std::pow(300.0 * 300.0 * std::pow(100.0, 0.25), 1 / 2.25);
  // The monotone pass leaves it: its time exceeds both lower neighbours' (R < 2·300).
  CHECK(table.flops_per_s(2048, 2048, 1024) == Approx(expected * kT));
  CHECK(gemm_idw_weight({1024, 1024, 1024, 1}, 2048, 2048, 1024) == Approx(0.25));
}

TEST_CASE("a larger shape measured faster than a smaller one is raised to its time",
          "[hw][gemm_table]") {
  // 2048 rows at 500 TFLOP/s take 2·2048·1024²/500T, less than 1024 rows at 200 TFLOP/s:
  // time may not fall as m grows, so the larger shape takes the smaller one's time.
  const std::vector<MeasuredGemm> points{{1024, 1024, 1024, 200 * kT},
                                         {2048, 1024, 1024, 500 * kT}};
  CHECK_FALSE(measured_times_consistent(points));
  const GemmTable table(points, 1000 * kT, "test");
  CHECK(table.compute_s(2048, 1024, 1024) == Approx(table.compute_s(1024, 1024, 1024)));
}

TEST_CASE("a table rejects repeated shapes and non-positive values", "[hw][gemm_table]") {
  CHECK_THROWS_AS(GemmTable({{1, 1, 1, 1}, {1, 1, 1, 2}}, 1, "x"), std::invalid_argument);
  CHECK_THROWS_AS(GemmTable({{1, 0, 1, 1}}, 1, "x"), std::invalid_argument);
  CHECK_THROWS_AS(GemmTable({}, 1, "x"), std::invalid_argument);
}

TEST_CASE("compute time never falls as m, n or k grows (seeded H100 tables)",
          "[hw][gemm_table][property]") {
  const GpuProfile h100 = test::load_shipped_gpu("h100-sxm");
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<double> log2_dim(4.0, 16.0), log2_step(0.0, 2.0);
  for (const auto& [dtype, table] : h100.gemm.measured) {
    for (int trial = 0; trial < 4000; ++trial) {
      const double m = std::exp2(log2_dim(rng)), n = std::exp2(log2_dim(rng));
      const double k = std::exp2(log2_dim(rng)), grow = std::exp2(log2_step(rng));
      const double t = table.compute_s(m, n, k);
      INFO(dtype_name(dtype) << " m " << m << " n " << n << " k " << k << " ×" << grow);
      REQUIRE(table.compute_s(m * grow, n, k) >= t * (1 - 1e-12));
      REQUIRE(table.compute_s(m, n * grow, k) >= t * (1 - 1e-12));
      REQUIRE(table.compute_s(m, n, k * grow) >= t * (1 - 1e-12));
    }
  }
}

TEST_CASE("the H100 bf16 seeds: each reproduced exactly, leave-one-out error bounded",
          "[hw][gemm_table]") {
  const GpuProfile h100 = test::load_shipped_gpu("h100-sxm");
  const GemmTable& table = h100.gemm.measured.at(Dtype::kBf16);
  REQUIRE(table.points().size() == 50);
  CHECK(measured_times_consistent(table.points()));
  for (const MeasuredGemm& p : table.points()) {
    CHECK(table.flops_per_s(p.m, p.n, p.k) == Approx(p.flops_per_s).epsilon(1e-9));
  }
  // Measured when the fill was chosen (sim/hw/README.md): median 5.5%, 80th percentile 10.4%,
  // worst 124% (1024³: without it the table's smallest corner is extrapolated from shapes
  // that run at twice its rate).
  const std::vector<double> errors = gemm_leave_one_out_errors(table.points(), table.best_flops());
  CHECK(percentile(errors, 0.5) < 0.06);
  CHECK(percentile(errors, 0.8) < 0.11);
  CHECK(percentile(errors, 1.0) < 1.25);
}

TEST_CASE("the B200 bf16 table: SimuMax's measured node, one point per shape", "[hw][gemm_table]") {
  const GpuProfile b200 = test::load_shipped_gpu("b200");
  const GemmTable& table = b200.gemm.measured.at(Dtype::kBf16);
  // docs/reference/simumax_b200_gemm.csv: 514 entries, less the 82 weight gradients without fp32
  // accumulation, are 432 passes over 378 distinct (M, N, K).
  REQUIRE(table.points().size() == 378);
  // The fc1 forward of Llama 3 70B at TP 8 (4096 tokens, 2·28672/8 = 7168 outputs, 8192 inputs)
  // was measured as TN at 0.6113 and, as the data gradient of another layer, NN at 0.4687: the
  // point is their median, (0.6113 + 0.4687) / 2 · 2250 = 1215.0 TFLOP/s.
  const auto fc1 = std::find_if(table.points().begin(), table.points().end(), [](const auto& p) {
    return p.m == 4096 && p.n == 7168 && p.k == 8192;
  });
  REQUIRE(fc1 != table.points().end());
  CHECK(fc1->flops_per_s == Approx(1215.0 * kT).epsilon(1e-3));
  // The table only raises a measured node's time where a smaller shape took longer (noise in
  // one pass), so every shape reads at most its measured rate, and most read it exactly.
  std::size_t exact = 0;
  for (const MeasuredGemm& p : table.points()) {
    const double rate = table.flops_per_s(p.m, p.n, p.k);
    CHECK(rate <= p.flops_per_s * (1 + 1e-9));
    if (rate >= p.flops_per_s * (1 - 1e-9)) ++exact;
  }
  CHECK(exact * 2 > table.points().size());
}
