#include "sim/hw/gpu_model.hpp"

#include <cmath>
#include <stdexcept>

#include <catch2/catch.hpp>

#include "shipped_profile.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;

namespace {

const GpuModel& h100() {
  static const GpuModel model(test::load_shipped_gpu("h100-sxm"));
  return model;
}

// Kernel time without the launch overhead, in seconds.
double busy_s(Time t) {
  return (t - h100().profile().kernel_launch_overhead).seconds();
}

constexpr int kAllSms = 132;
// The FlashAttention-3 tables: the attention cases below read the FA3 rows of kernels.md B1.
constexpr AttentionKernel kFa3 = AttentionKernel::kFlash3;

}  // namespace

TEST_CASE("a big square bf16 GEMM on H100 runs at the table's largest measured shape's rate",
          "[hw][model][gemm]") {
  // 16896³ lies beyond the sm_90 table in every dimension (largest: 16384 rows, n and k 4096),
  // so it keeps the rate of 16384×4096×4096, 793.1 TFLOP/s (kernels.md A2, b=4 4096³), which
  // is under the MAMF cap of 794.5. Its waves: 16896 = 128·132 = 256·66, so the 128×256 tiles
  // fill exactly 66 waves and the wave floor is F / 794.5 TFLOP/s, below the table's time.
  // Compute-bound: 1.7 GB of bytes take 0.57 ms at 0.9·3.35 TB/s against 12 ms of compute.
  const GemmShape shape{.m = 16896, .n = 16896, .k = 16896};
  const double flops = 2.0 * 16896 * 16896 * 16896;
  const Time t = h100().gemm(shape, Dtype::kBf16, kAllSms);
  CHECK(flops / busy_s(t) == Approx(793.1e12).epsilon(1e-6));
}

TEST_CASE("beyond the table a GEMM with one tile more than the SMs pays two whole waves",
          "[hw][model][gemm]") {
  // n = 19·256 = 4864 lies beyond the table's largest n (4096), so waves count there:
  // m = 7·128 gives 7·19 = 133 tiles on 132 SMs, two waves of one 128×256×16384 tile per SM
  // at the per-SM share of 794.5 TFLOP/s: 2 · 2·16384·128·256 / (794.5e12 / 132) = 357 µs.
  // The table's own time is lower: F = 142.8 GFLOP at the rate of 896×4096×4096 (~720).
  const GemmShape over{.m = 7 * 128, .n = 19 * 256, .k = 16384};
  const double two_waves = 2 * 2.0 * 16384 * 128 * 256 / (794.5e12 / 132);
  CHECK(busy_s(h100().gemm(over, Dtype::kBf16, kAllSms)) == Approx(two_waves).epsilon(1e-6));
  // Inside the table no wave term: 2432×1792×16384 (133 tiles) keeps the table's rate.
  const GemmShape inside{.m = 19 * 128, .n = 7 * 256, .k = 16384};
  CHECK(h100().gemm_compute_s(inside, Dtype::kBf16, kAllSms) ==
        Approx(h100().profile().gemm.table(Dtype::kBf16)->compute_s(2432, 1792, 16384)));
}

TEST_CASE("a skinny GEMM is memory-bound: its time is bytes over HBM bandwidth",
          "[hw][model][gemm]") {
  // 16 tokens through an 8192×8192 weight: reading the weight dominates.
  // bytes = (16·8192 + 8192·8192 + 16·8192)·2 = 134.5 MB, above 100 MB so HBM runs at 0.9
  // of 3.35 TB/s: 44.6 µs. Compute: 16 rows lie below the table's smallest (256), so the rate
  // of its nearest shape, 256×4096×4096, holds: 2.1 GFLOP at 412 TF/s = 5.2 µs (no wave
  // floor below the smallest measured rows). The memory term wins.
  const GemmShape shape{.m = 16, .n = 8192, .k = 8192};
  const double bytes = (16.0 * 8192 + 8192.0 * 8192 + 16.0 * 8192) * 2;
  CHECK(busy_s(h100().gemm(shape, Dtype::kBf16, kAllSms)) ==
        Approx(bytes / (0.9 * 3.35e12)).epsilon(1e-6));
}

TEST_CASE("without a table a 29 GFLOP GEMM runs below the best-shape rate by the size falloff",
          "[hw][model][gemm]") {
  // The A100 profile has no measured table (kernels.md has only A100's MAMF), so the falloff
  // path times it. 12·9 = 108 tiles on 108 SMs (one full wave). F = 2·1536·2304·4096 = 29.0
  // GFLOP lies between the falloff points 16 GFLOP (0.9474) and 128 GFLOP (1.0), log2-linear.
  static const GpuModel a100(test::load_shipped_gpu("a100-sxm-80gb"));
  const GemmShape shape{.m = 1536, .n = 2304, .k = 4096};
  const double flops = gemm_flops(shape);
  const double t = std::log2(flops / 16e9) / std::log2(128e9 / 16e9);
  const double relative = 0.9474 + t * (1.0 - 0.9474);
  const double busy =
      (a100.gemm(shape, Dtype::kBf16, 108) - a100.profile().kernel_launch_overhead).seconds();
  CHECK(flops / busy == Approx(271.2e12 * relative).epsilon(1e-6));
}

TEST_CASE("an fp8 GEMM on H100 runs at the fp8 best-shape rate", "[hw][model][gemm]") {
  // Same full-wave shape as the bf16 case; MAMF fp8 e4m3 is 1402.6 TF/s (hardware.md §1.3).
  const GemmShape shape{.m = 16896, .n = 16896, .k = 16896};
  CHECK(gemm_flops(shape) / busy_s(h100().gemm(shape, Dtype::kFp8, kAllSms)) ==
        Approx(1402.6e12).epsilon(1e-6));
}

TEST_CASE("fewer SMs slow a compute-bound GEMM in proportion", "[hw][model][gemm]") {
  // A comm kernel holding 16 SMs leaves 116. Tiles 132·116 (m = 132·128, n = 116·256) fill
  // whole waves on both 132 and 116 SMs, so only the SM count changes: time × 132/116.
  const GemmShape shape{.m = 132 * 128, .n = 116 * 256, .k = 8192};
  const int left = h100().profile().sms - h100().profile().comm_kernel_sms;
  REQUIRE(left == 116);
  CHECK(busy_s(h100().gemm(shape, Dtype::kBf16, left)) /
            busy_s(h100().gemm(shape, Dtype::kBf16, kAllSms)) ==
        Approx(132.0 / 116.0).epsilon(1e-6));
}

TEST_CASE("every kernel pays the launch overhead", "[hw][model]") {
  const Time launch = h100().profile().kernel_launch_overhead;
  CHECK(launch == Time::from_us(1.0));
  CHECK(h100().gemm({.m = 0, .n = 4096, .k = 4096}, Dtype::kBf16, kAllSms) == launch);
  CHECK(h100().memory_bound(0, kAllSms) == launch);
}

TEST_CASE("attention forward at seq 8k, head dim 128 runs at the FA3 table value",
          "[hw][model][attention]") {
  // FA3 paper, H100 BF16, non-causal forward, hdim 128, seqlen 8k: 646 TFLOP/s.
  const AttentionShape shape{.batch = 2,
                             .heads = 16,
                             .kv_heads = 16,
                             .seq_q = 8192,
                             .seq_kv = 8192,
                             .head_dim = 128,
                             .causal = false};
  const double flops = 4.0 * 2 * 16 * 8192.0 * 8192 * 128;
  CHECK(busy_s(h100().attention_forward(shape, kFa3, kAllSms)) ==
        Approx(flops / 646e12).epsilon(1e-6));
}

TEST_CASE("causal attention does half the work at the causal table's rate",
          "[hw][model][attention]") {
  // Causal forward hdim 128 at 8k: 602 TFLOP/s over half of 4·b·h·s²·d.
  const AttentionShape shape{.batch = 2,
                             .heads = 16,
                             .kv_heads = 16,
                             .seq_q = 8192,
                             .seq_kv = 8192,
                             .head_dim = 128,
                             .causal = true};
  const double half_flops = 4.0 * 2 * 16 * 8192.0 * 8192 * 128 / 2;
  CHECK(busy_s(h100().attention_forward(shape, kFa3, kAllSms)) ==
        Approx(half_flops / 602e12).epsilon(1e-6));
}

TEST_CASE("attention backward does 2.5 times the forward work at the backward table's rate",
          "[hw][model][attention]") {
  // Backward hdim 128 at 4k: 542 TFLOP/s. Between table points (4k and 8k: 542, 559) the rate
  // is log2-interpolated: 6k sits at log2(1.5) = 0.585 of the way.
  AttentionShape shape{.batch = 4,
                       .heads = 16,
                       .kv_heads = 16,
                       .seq_q = 4096,
                       .seq_kv = 4096,
                       .head_dim = 128,
                       .causal = false};
  CHECK(busy_s(h100().attention_backward(shape, kFa3, kAllSms)) ==
        Approx(2.5 * attention_forward_flops(shape) / 542e12).epsilon(1e-6));
  shape.seq_q = shape.seq_kv = 6144;
  const double rate = 542e12 + std::log2(1.5) * (559e12 - 542e12);
  CHECK(busy_s(h100().attention_backward(shape, kFa3, kAllSms)) ==
        Approx(2.5 * attention_forward_flops(shape) / rate).epsilon(1e-6));
}

TEST_CASE("fewer SMs slow attention in proportion", "[hw][model][attention]") {
  const AttentionShape shape{.batch = 1,
                             .heads = 32,
                             .kv_heads = 8,
                             .seq_q = 4096,
                             .seq_kv = 4096,
                             .head_dim = 128,
                             .causal = true};
  CHECK(busy_s(h100().attention_forward(shape, kFa3, 116)) /
            busy_s(h100().attention_forward(shape, kFa3, kAllSms)) ==
        Approx(132.0 / 116.0).epsilon(1e-6));
}

TEST_CASE("a memory-bound kernel streams at the HBM efficiency for its size",
          "[hw][model][memory]") {
  // 1 GB: above 100 MB, 0.9 of 3.35 TB/s.
  CHECK(busy_s(h100().memory_bound(1e9, kAllSms)) == Approx(1e9 / (0.9 * 3.35e12)).epsilon(1e-6));
  // 10^6.5 B is halfway between the 1 MB (0.60) and 10 MB (0.75) points in log2.
  const double bytes = std::pow(10.0, 6.5);
  CHECK(busy_s(h100().memory_bound(bytes, kAllSms)) ==
        Approx(bytes / (0.675 * 3.35e12)).epsilon(1e-6));
}

TEST_CASE("a memory-bound kernel keeps its bandwidth when a comm kernel holds SMs",
          "[hw][model][memory]") {
  CHECK(h100().memory_bound(1e9, 116) == h100().memory_bound(1e9, kAllSms));
}

TEST_CASE("an fp8 GEMM on an A100 is an input error", "[hw][model][gemm]") {
  const GpuModel a100(test::load_shipped_gpu("a100-sxm-80gb"));
  CHECK_THROWS_AS(a100.gemm({.m = 4096, .n = 4096, .k = 4096}, Dtype::kFp8, 108), InputError);
  CHECK_NOTHROW(a100.gemm({.m = 4096, .n = 4096, .k = 4096}, Dtype::kBf16, 108));
}

TEST_CASE("SMs available outside [1, sms] are a programming error", "[hw][model]") {
  const GemmShape shape{.m = 1024, .n = 1024, .k = 1024};
  CHECK_THROWS_AS(h100().gemm(shape, Dtype::kBf16, 0), std::invalid_argument);
  CHECK_THROWS_AS(h100().gemm(shape, Dtype::kBf16, 133), std::invalid_argument);
  CHECK_THROWS_AS(h100().memory_bound(1e6, 0), std::invalid_argument);
}

TEST_CASE("the same kernel always takes the same time", "[hw][model]") {
  const GemmShape shape{.m = 4000, .n = 5000, .k = 3000, .batch = 3};
  CHECK(h100().gemm(shape, Dtype::kBf16, 116).ps() == h100().gemm(shape, Dtype::kBf16, 116).ps());
}
