#include "sim/hw/grouped_gemm.hpp"

#include <random>

#include <catch2/catch.hpp>

#include "shipped_profile.hpp"
#include "sim/hw/gpu_model.hpp"
#include "sim/hw/wave_quantization.hpp"

using namespace wallsim;

namespace {

const GpuModel& h100() {
  static const GpuModel model(test::load_shipped_gpu("h100-sxm"));
  return model;
}

GroupedGemmShape experts(std::vector<std::int64_t> rows, std::int64_t n, std::int64_t k) {
  GroupedGemmShape g;
  for (std::int64_t m : rows) g.problems.push_back({m, n, k});
  return g;
}

}  // namespace

TEST_CASE("a grouped GEMM folds into one GEMM of the problems' tile-padded rows", "[hw][grouped]") {
  // 8 experts of 256 rows: 2048 rows. 8 of 64 rows: each padded to one 128-row tile, 1024.
  CHECK(fold_grouped_gemm(experts({256, 256, 256, 256, 256, 256, 256, 256}, 4096, 2048), 128).m ==
        2048);
  const GemmShape small =
      fold_grouped_gemm(experts(std::vector<std::int64_t>(8, 64), 4096, 2048), 128);
  CHECK(small.m == 1024);
  CHECK(small.k == 2048);
  // Weight gradients: the problems share m and n and differ in k (the expert's rows):
  // k = (128·100 + 128·300) / 256 = 200.
  GroupedGemmShape wgrad;
  wgrad.problems = {{128, 4096, 100}, {128, 4096, 300}};
  CHECK(fold_grouped_gemm(wgrad, 128).k == 200);
  CHECK_THROWS_AS(fold_grouped_gemm({{{1, 2, 3}, {1, 4, 3}}}, 128), std::invalid_argument);
}

TEST_CASE("a grouped GEMM computes at the table's rate for its folded rows", "[hw][grouped]") {
  // 4 problems of 1024×4096×4096 fold to 4096×4096×4096: 783.3 TFLOP/s (kernels.md A2), one
  // kernel, one launch; alone each 1024-row GEMM runs at 738.5. Compute-bound: 137 GFLOP take
  // 175 µs, the 4 problems' 201 MB (each its own weight) 67 µs at 0.9·3.35 TB/s.
  const auto g = experts(std::vector<std::int64_t>(4, 1024), 4096, 4096);
  const Time launch = h100().profile().kernel_launch_overhead;
  const double busy = (h100().grouped_gemm(g, Dtype::kBf16, 132) - launch).seconds();
  CHECK(grouped_gemm_flops(g) / busy == Approx(783.3e12).epsilon(1e-6));
  const double one = (h100().gemm({1024, 4096, 4096}, Dtype::kBf16, 132) - launch).seconds();
  CHECK(gemm_flops({1024, 4096, 4096}) / one == Approx(738.5e12).epsilon(1e-6));
}

TEST_CASE("uneven expert loads pay their tile padding", "[hw][grouped]") {
  // 100 + 412 rows pad to 128 + 512 = 640 rows; 256 + 256 pad to 512: the uneven group computes
  // 640 rows' worth.
  const double uneven = h100().gemm_compute_s(
      fold_grouped_gemm(experts({100, 412}, 4096, 4096), 128), Dtype::kBf16, 132);
  const double even = h100().gemm_compute_s({640, 4096, 4096}, Dtype::kBf16, 132);
  CHECK(uneven == Approx(even));
}

TEST_CASE("the wave floor counts whole waves of whole tiles", "[hw][waves]") {
  // 133 tiles on 132 SMs: two waves of 2·1024·128·256 FLOPs per SM at 792/132 TFLOP/s each.
  CHECK(wave_floor_s(133, 1024, 128, 256, 132, 132, 792e12) ==
        Approx(2 * 2.0 * 1024 * 128 * 256 / 6e12));
  // On 116 SMs 133 tiles still take two waves, each at the same per-SM rate.
  CHECK(wave_floor_s(133, 1024, 128, 256, 116, 132, 792e12) ==
        Approx(wave_floor_s(133, 1024, 128, 256, 132, 132, 792e12)));
  CHECK(wave_floor_s(0, 1024, 128, 256, 132, 132, 792e12) == 0.0);
}

TEST_CASE("a GEMM's time never falls as m, n or k grows (whole H100 model, both dtypes)",
          "[hw][grouped][property]") {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<std::int64_t> dim(1, 40000), step(1, 5000);
  for (Dtype dtype : {Dtype::kBf16, Dtype::kFp8}) {
    for (int trial = 0; trial < 3000; ++trial) {
      const GemmShape s{dim(rng), dim(rng), dim(rng)};
      const std::int64_t d = step(rng);
      const Time t = h100().gemm(s, dtype, 116);
      INFO(dtype_name(dtype) << " " << s.m << "x" << s.n << "x" << s.k << " +" << d);
      REQUIRE(h100().gemm({s.m + d, s.n, s.k}, dtype, 116) >= t);
      REQUIRE(h100().gemm({s.m, s.n + d, s.k}, dtype, 116) >= t);
      REQUIRE(h100().gemm({s.m, s.n, s.k + d}, dtype, 116) >= t);
    }
  }
}

TEST_CASE("a grouped GEMM's mean problem: rows per problem with work, n, rows-weighted k",
          "[hw][grouped]") {
  // 100 and 300 rows (an expert with none skipped): m = 400 / 2 = 200 per problem.
  const MeanGroupedProblem forward = mean_grouped_problem(experts({100, 0, 300}, 4096, 2048));
  CHECK(forward.problems == 2);
  CHECK(forward.m == 200);
  CHECK(forward.n == 4096);
  CHECK(forward.k == 2048);
  // Weight gradients share m and differ in k: k = (128·100 + 128·300) / 256 = 200.
  GroupedGemmShape wgrad;
  wgrad.problems = {{128, 4096, 100}, {128, 4096, 300}, {128, 4096, 0}};
  const MeanGroupedProblem w = mean_grouped_problem(wgrad);
  CHECK(w.problems == 2);
  CHECK(w.m == 128);
  CHECK(w.k == 200);
  CHECK(mean_grouped_problem(experts({0, 0}, 4096, 2048)).problems == 0);
  CHECK_THROWS_AS(mean_grouped_problem({{{1, 2, 3}, {1, 4, 3}}}), std::invalid_argument);
}

TEST_CASE("on B200 a grouped GEMM runs at the grouped table's rate for its mean problem",
          "[hw][grouped]") {
  static const GpuModel b200(test::load_shipped_gpu("b200"));
  const Time launch = b200.profile().kernel_launch_overhead;
  // DeepSeek-V3's fc1 forward over 32 local experts of 1,024 rows (n = 2·2048, k = 7168), as
  // SimuMax measured it on its B200 node: efficiencies 0.458024 and 0.457111 of 2250 TFLOP/s
  // (docs/reference/simumax_b200_grouped_gemm.csv), median 0.457567 → 1029.5 TFLOP/s.
  // Compute-bound: 1.92 TFLOP take 1.87 ms, the 2.6 GB of the 32 problems under 0.5 ms.
  const auto fc1 = experts(std::vector<std::int64_t>(32, 1024), 4096, 7168);
  const double busy = (b200.grouped_gemm(fc1, Dtype::kBf16, 148) - launch).seconds();
  CHECK(grouped_gemm_flops(fc1) / busy == Approx(1029.5e12).epsilon(1e-6));
  // Folded into one 32,768-row GEMM of the dense table it would run faster: the per-problem
  // weights and tails are what the grouped measurement adds.
  const double folded =
      b200.gemm_compute_s(fold_grouped_gemm(fc1, b200.profile().gemm.tile_m), Dtype::kBf16, 148);
  CHECK(folded < busy);
  // A comm kernel's SMs slow it in proportion, as for dense GEMMs.
  const double shared = (b200.grouped_gemm(fc1, Dtype::kBf16, 74) - launch).seconds();
  CHECK(shared == Approx(2 * busy).epsilon(1e-9));
  // FP8 has no grouped table on B200: it folds into the dense fp8 table.
  const double fp8 = (b200.grouped_gemm(fc1, Dtype::kFp8, 148) - launch).seconds();
  const double fp8_folded =
      b200.gemm_compute_s(fold_grouped_gemm(fc1, b200.profile().gemm.tile_m), Dtype::kFp8, 148);
  CHECK(fp8 == Approx(fp8_folded).epsilon(1e-9));
}
