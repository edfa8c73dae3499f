// Recovery of known kernel parameters from synthetic noisy data (test_profiles.hpp: the H100
// profile with altered best GEMM rates, launch gap and HBM curve; 2% multiplicative noise).
// Each tolerance is derived beside its check from the noise and the number of points.
#include <catch2/catch.hpp>

#include "calibration/fit/kernel_fit.hpp"
#include "sim/hw/gpu_model.hpp"
#include "test_profiles.hpp"

using namespace wallsim;

namespace {

const std::vector<RawFile>& noisy() {
  static const auto files = test::synthetic_from(test::altered_h100_document(), 0.02);
  return files;
}

GpuProfile altered_gpu() {
  return parse_profile(test::altered_h100_document(), "t").gpu;
}

}  // namespace

TEST_CASE("noiseless memory points give back the launch gap and HBM curve exactly") {
  const auto exact = test::synthetic_from(test::altered_h100_document(), 0.0);
  const auto fit = fit_memory(exact[2].memory, 3.35e12);
  REQUIRE(fit);
  CHECK(fit->launch_overhead_us == Approx(2.5).epsilon(1e-6));
  // Large transfers stream at 0.85 of 3.35 TB/s (the altered curve's top).
  CHECK(fit->streaming_Bps == Approx(0.85 * 3.35e12).epsilon(1e-6));
  CHECK(LogCurve(fit->hbm_efficiency).at(1e7) == Approx(0.675).epsilon(1e-3));
}

TEST_CASE("the memory fit recovers launch gap and bandwidth from noisy points") {
  const auto fit = fit_memory(noisy()[2].memory, 3.35e12);
  REQUIRE(fit);
  // The intercept rests on 8 empty kernels: 2%/sqrt(8) = 0.7% of 2.5 µs; 3% is over 4 sigma.
  CHECK(fit->launch_overhead_us == Approx(2.5).epsilon(0.03));
  // 36 transfers of >= 1e8 B: 2%/6 = 0.33%; 2% is 6 sigma.
  CHECK(fit->streaming_Bps == Approx(0.85 * 3.35e12).epsilon(0.02));
  // At 1e7 B (truth: 0.5 + 0.35·log2(10)/log2(100) = 0.675, on the curve's one linear piece)
  // each sample is 6.9 µs with 4.4 µs of transfer, so 2% noise is 3.1% on the efficiency; a
  // median of 6 samples per bin is ~1.6%; 6% allows for the launch error and pooling.
  CHECK(LogCurve(fit->hbm_efficiency).at(1e7) == Approx(0.675).epsilon(0.06));
}

TEST_CASE("the memory fit needs an empty kernel and a large transfer") {
  std::vector<MemoryPoint> small{{MemoryKernel::kCopy, 1e6, 1e-6},
                                 {MemoryKernel::kCopy, 2e6, 2e-6}};
  CHECK_FALSE(fit_memory(small, 3.35e12));
}

TEST_CASE("the GEMM fit recovers the best rate per dtype and the measured tables") {
  const GpuProfile gpu = altered_gpu();
  const auto fit = fit_gemm(noisy()[0].gemm, gpu);
  REQUIRE(fit);
  // The 0.8 quantile of ~60 large GEMMs with 2% noise sits 0.84 sigma = 1.7% above the truth
  // (sampling error ~0.4%): best within [truth, truth + 3.5%].
  CHECK(fit->best_tflops.at(Dtype::kBf16) / 700.0 == Approx(1.017).margin(0.018));
  CHECK(fit->best_tflops.at(Dtype::kFp8) / 1300.0 == Approx(1.017).margin(0.018));
  // Each table entry is one shape's achieved rate: against the model that drew the data, 2%
  // noise per sample (7% is 3.5 sigma) plus the launch gap's fitted error (3% of 2.5 µs, under
  // 1% of a GEMM computing 10 µs or more).
  const GpuModel model(gpu);
  int checked = 0;
  for (const auto& [dtype, table] : fit->measured) {
    for (const MeasuredGemm& p : table) {
      const GemmShape shape{static_cast<std::int64_t>(p.m), static_cast<std::int64_t>(p.n),
                            static_cast<std::int64_t>(p.k)};
      if (model.gemm_compute_s(shape, dtype, gpu.sms) < 10e-6) continue;
      CHECK(p.flops_per_s ==
            Approx(model.gemm_compute_flops_per_s(shape, dtype, gpu.sms)).epsilon(0.07));
      ++checked;
    }
  }
  CHECK(checked > 100);
}

TEST_CASE("memory-bound GEMMs are left out of the compute fit") {
  const GpuProfile gpu = altered_gpu();
  // 16 tokens through a 8192x8192 weight: 134 MB moved for 2.1 GFLOP, far below the ridge.
  const GemmShape skinny{16, 8192, 8192};
  const double t = GpuModel(gpu).gemm(skinny, Dtype::kBf16, gpu.sms).seconds();
  CHECK_FALSE(fit_gemm({{skinny, Dtype::kBf16, t}}, gpu));
}

TEST_CASE("the attention fit rebuilds the measured tables") {
  const auto tables = fit_attention(noisy()[1].attention, 2.5);
  // 2 passes x 2 masks x 2 head dims measured.
  REQUIRE(tables.size() == 8);
  const AttentionTables fitted("fit", tables);
  const AttentionTables truth = altered_gpu().attention_tables(AttentionKernel::kCudnn);
  // Two samples per sequence length, 2% each: the mean is 1.4%; 6% is over 4 sigma.
  for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    for (bool causal : {false, true}) {
      for (double seq : {512.0, 4096.0, 16384.0}) {
        CHECK(fitted.achieved_flops(pass, causal, 128, seq) ==
              Approx(truth.achieved_flops(pass, causal, 128, seq)).epsilon(0.06));
      }
    }
  }
}
