// mem_bench: HBM bandwidth and launch gap from copy and elementwise kernels (bf16), and empty
// kernels. Each point is the median over 10 runs of 20 back-to-back launches, per launch, so it
// includes the device-side gap between kernels in one stream, as wallsim's model charges it.
// Bytes are what a kernel reads plus writes. Writes raw JSON "memory" (calibration/README.md).
#include <cuda_bf16.h>

#include "bench_common.hpp"

namespace {

constexpr int kInner = 20;
constexpr int kThreads = 256;

__global__ void empty_kernel() {}

__global__ void copy_kernel(const uint4* __restrict__ in, uint4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = in[i];
  }
}

// Residual add y = a + b: reads 2, writes 1.
__global__ void residual_kernel(const __nv_bfloat162* a, const __nv_bfloat162* b, __nv_bfloat162* y,
                                size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    y[i] = __hadd2(a[i], b[i]);
  }
}

// SwiGLU y = silu(g) * u: reads 2, writes 1.
__global__ void swiglu_kernel(const __nv_bfloat16* g, const __nv_bfloat16* u, __nv_bfloat16* y,
                              size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float x = __bfloat162float(g[i]);
    y[i] = __float2bfloat16(x / (1.0f + __expf(-x)) * __bfloat162float(u[i]));
  }
}

// RMSNorm over rows of `width`: one block per row; reads x once, writes y once.
__global__ void rmsnorm_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, int width) {
  __shared__ float partial[kThreads];
  const __nv_bfloat16* row = x + static_cast<size_t>(blockIdx.x) * width;
  float sum = 0;
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    const float v = __bfloat162float(row[i]);
    sum += v * v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = rsqrtf(partial[0] / width + 1e-6f);
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    y[static_cast<size_t>(blockIdx.x) * width + i] =
        __float2bfloat16(__bfloat162float(row[i]) * scale);
  }
}

int grid_for(size_t n, int sms) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<size_t>(blocks, static_cast<size_t>(sms) * 8));
}

bench::JsonObject point(const char* kind, const char* name, double bytes, double time_s) {
  bench::JsonObject p;
  p.add("kind", kind).add("name", name).add("bytes", bytes).add("time_s", time_s);
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Flags flags = bench::parse_flags(argc, argv, "mem_bench");
  int sms = 0;
  BENCH_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t max_bytes = size_t{1} << 31;  // per buffer; a copy moves 2x this
  char *a = nullptr, *b = nullptr, *c = nullptr;
  BENCH_CHECK_CUDA(cudaMalloc(&a, max_bytes));
  BENCH_CHECK_CUDA(cudaMalloc(&b, max_bytes));
  BENCH_CHECK_CUDA(cudaMalloc(&c, max_bytes));
  BENCH_CHECK_CUDA(cudaMemset(a, 0x3c, max_bytes));  // finite bf16 values (0x3c3c ~ 0.0115)
  BENCH_CHECK_CUDA(cudaMemset(b, 0x3c, max_bytes));

  std::vector<bench::JsonObject> points;
  for (int r = 0; r < 8; ++r) {
    const double t = bench::median_time_s([] { empty_kernel<<<1, 32>>>(); }, 3, 10, kInner);
    points.push_back(point("empty", "empty", 0, t));
  }
  const int step = flags.quick ? 4 : 1;
  for (int log2_buffer = 12; log2_buffer <= 31; log2_buffer += step) {
    const size_t buffer = size_t{1} << log2_buffer;  // bytes of one operand
    const size_t n16 = buffer / 16, n4 = buffer / 4, n2 = buffer / 2;
    auto copy = [&] { copy_kernel<<<grid_for(n16, sms), kThreads>>>((uint4*)a, (uint4*)c, n16); };
    auto residual = [&] {
      residual_kernel<<<grid_for(n4, sms), kThreads>>>((__nv_bfloat162*)a, (__nv_bfloat162*)b,
                                                       (__nv_bfloat162*)c, n4);
    };
    auto swiglu = [&] {
      swiglu_kernel<<<grid_for(n2, sms), kThreads>>>((__nv_bfloat16*)a, (__nv_bfloat16*)b,
                                                     (__nv_bfloat16*)c, n2);
    };
    const int width = 4096, rows = static_cast<int>(std::max<size_t>(1, n2 / width));
    auto norm = [&] {
      rmsnorm_kernel<<<rows, kThreads>>>((__nv_bfloat16*)a, (__nv_bfloat16*)c, width);
    };
    points.push_back(
        point("copy", "copy", 2.0 * buffer, bench::median_time_s(copy, 3, 10, kInner)));
    points.push_back(point("elementwise", "residual_add", 3.0 * buffer,
                           bench::median_time_s(residual, 3, 10, kInner)));
    points.push_back(
        point("elementwise", "swiglu", 3.0 * buffer, bench::median_time_s(swiglu, 3, 10, kInner)));
    points.push_back(point("elementwise", "rmsnorm", 2.0 * rows * width * 2,
                           bench::median_time_s(norm, 3, 10, kInner)));
  }
  BENCH_CHECK_CUDA(cudaGetLastError());
  bench::write_raw(flags.out, "mem_bench", bench::hardware(0, {}), "memory", points);
  return 0;
}
