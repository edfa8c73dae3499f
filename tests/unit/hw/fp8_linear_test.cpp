// FP8 against BF16 for a whole layer-norm → linear → sigmoid, forward and backward, on H100:
// torchao's float8 benchmark (docs/reference/kernels.md A6) measured speedups of 0.80 at
// M,K,N = 1024,2048,1024 and 1.39 at 4096,8192,16384 with casting overhead included.
#include <catch2/catch.hpp>

#include "shipped_profile.hpp"
#include "sim/hw/gpu_model.hpp"

using namespace wallsim;

namespace {

// The step builder's fp8 rule (models/step/op_emitter.cpp): each GEMM input is cast from bf16
// by its own memory-bound kernel, reading 2 bytes and writing 1 per element.
constexpr double kCastBytesPerElement = 3.0;
constexpr double kBf16 = 2.0;

double gemm_s(const GpuModel& gpu, const GemmShape& s, Dtype dtype) {
  const int sms = gpu.profile().sms;
  double t = gpu.gemm(s, dtype, sms).seconds();
  if (dtype == Dtype::kFp8) {
    const double a = static_cast<double>(s.m) * static_cast<double>(s.k);
    const double b = static_cast<double>(s.k) * static_cast<double>(s.n);
    t += gpu.memory_bound(kCastBytesPerElement * a, sms).seconds();
    t += gpu.memory_bound(kCastBytesPerElement * b, sms).seconds();
  }
  return t;
}

// Layer norm over [M, K] (forward reads x and writes y; backward reads x and dy, writes dx),
// linear [M, K]·[K, N] (forward, data gradient, weight gradient), sigmoid over [M, N] (the
// same traffic pattern). The norm and sigmoid stay bf16 in both precisions.
double layer_s(const GpuModel& gpu, std::int64_t m, std::int64_t k, std::int64_t n, Dtype dtype) {
  const int sms = gpu.profile().sms;
  const double mk = static_cast<double>(m) * static_cast<double>(k);
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  double t = gpu.memory_bound(2 * kBf16 * mk, sms).seconds() +
             gpu.memory_bound(3 * kBf16 * mk, sms).seconds() +
             gpu.memory_bound(2 * kBf16 * mn, sms).seconds() +
             gpu.memory_bound(3 * kBf16 * mn, sms).seconds();
  t += gemm_s(gpu, {m, n, k}, dtype);  // forward
  t += gemm_s(gpu, {m, k, n}, dtype);  // data gradient
  t += gemm_s(gpu, {k, n, m}, dtype);  // weight gradient
  return t;
}

double speedup(std::int64_t m, std::int64_t k, std::int64_t n) {
  const GpuModel gpu(test::load_shipped_gpu("h100-sxm"));
  return layer_s(gpu, m, k, n, Dtype::kBf16) / layer_s(gpu, m, k, n, Dtype::kFp8);
}

}  // namespace

TEST_CASE("fp8 against bf16 for a small layer-norm → linear (torchao: 0.80)", "[hw][fp8]") {
  // The model gives 0.97. Tolerance ±0.25: this layer takes ~40 µs, of which launch gaps
  // (13 kernels at 1 µs) and 2–12 MB transfers in the steep part of the HBM efficiency curve
  // make half; torch.compile fuses the activation cast into the layer norm (fewer bytes than
  // here) and dynamic scaling adds amax reductions the model omits (more kernels), each worth
  // 10–20% of the layer. The fp8 table has no shape below M = N = 8192, so the fp8 GEMMs here
  // run at 8192×8192's rate: optimistic, which is why the model sits above 0.80.
  const double s = speedup(1024, 2048, 1024);
  UNSCOPED_INFO("model fp8/bf16 speedup at 1024,2048,1024: " << s);
  CHECK(s == Approx(0.80).margin(0.25));
}

TEST_CASE("fp8 against bf16 for a large layer-norm → linear (torchao: 1.39)", "[hw][fp8]") {
  // The model gives 1.47. Tolerance ±10%: GEMMs dominate, and both rates are single sources
  // (bf16: the table's largest node held beyond it; fp8: TileLang on H800 at K = 8192, capped at
  // the cuBLAS MAMF), each some 5–10% from what Transformer Engine's cuBLAS calls would run.
  const double s = speedup(4096, 8192, 16384);
  UNSCOPED_INFO("model fp8/bf16 speedup at 4096,8192,16384: " << s);
  CHECK(s == Approx(1.39).epsilon(0.10));
}
