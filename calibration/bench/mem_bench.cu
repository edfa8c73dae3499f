// mem_bench: HBM bandwidth and launch gap from copy and elementwise kernels (bf16), and empty
// kernels. Each point is the median over 10 replays of a CUDA graph of 20 back-to-back launches,
// per launch, so it includes the device-side gap between kernels in one stream, as wallsim's
// model charges it, and not the host's launch rate (bench_common.hpp). Kernels move 16 bytes
// per thread access, as fused framework kernels do. Bytes are what a kernel reads plus writes.
// Writes raw JSON "memory" (calibration/README.md).
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

// Eight bf16 values, one 16-byte access.
union Bf16x8 {
  uint4 raw;
  __nv_bfloat162 pair[4];
};

// Residual add y = a + b: reads 2, writes 1; eight elements per thread access.
__global__ void residual_kernel(const uint4* a, const uint4* b, uint4* y, size_t n8) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += gridDim.x * blockDim.x) {
    Bf16x8 av, bv;
    av.raw = a[i];
    bv.raw = b[i];
    for (int j = 0; j < 4; ++j) av.pair[j] = __hadd2(av.pair[j], bv.pair[j]);
    y[i] = av.raw;
  }
}

// SwiGLU y = silu(g) * u: reads 2, writes 1; eight elements per thread access.
__global__ void swiglu_kernel(const uint4* g, const uint4* u, uint4* y, size_t n8) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += gridDim.x * blockDim.x) {
    Bf16x8 gv, uv, out;
    gv.raw = g[i];
    uv.raw = u[i];
    for (int j = 0; j < 4; ++j) {
      const float2 a = __bfloat1622float2(gv.pair[j]), b = __bfloat1622float2(uv.pair[j]);
      out.pair[j] = __floats2bfloat162_rn(a.x / (1.0f + __expf(-a.x)) * b.x,
                                          a.y / (1.0f + __expf(-a.y)) * b.y);
    }
    y[i] = out.raw;
  }
}

// RMSNorm over rows of `width` (a multiple of 8): one block per row, 16-byte accesses; reads x
// from HBM once (the second pass over the row hits the cache), writes y once.
__global__ void rmsnorm_kernel(const uint4* x, uint4* y, int width) {
  __shared__ float partial[kThreads];
  const int n8 = width / 8;
  const uint4* row = x + static_cast<size_t>(blockIdx.x) * n8;
  float sum = 0;
  for (int i = threadIdx.x; i < n8; i += blockDim.x) {
    Bf16x8 v;
    v.raw = row[i];
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(v.pair[j]);
      sum += f.x * f.x + f.y * f.y;
    }
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float scale = rsqrtf(partial[0] / width + 1e-6f);
  for (int i = threadIdx.x; i < n8; i += blockDim.x) {
    Bf16x8 v;
    v.raw = row[i];
    for (int j = 0; j < 4; ++j) {
      const float2 f = __bfloat1622float2(v.pair[j]);
      v.pair[j] = __floats2bfloat162_rn(f.x * scale, f.y * scale);
    }
    y[static_cast<size_t>(blockIdx.x) * n8 + i] = v.raw;
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
  BENCH_CHECK_CUDA(cudaDeviceSynchronize());
  const cudaStream_t stream = bench::bench_stream();
  const auto timed = [&](auto launch) {
    return bench::median_graph_time_s(launch, stream, 3, 10, kInner);
  };

  std::vector<bench::JsonObject> points;
  for (int r = 0; r < 8; ++r) {
    const double t = timed([&] { empty_kernel<<<1, 32, 0, stream>>>(); });
    points.push_back(point("empty", "empty", 0, t));
  }
  const int step = flags.quick ? 4 : 1;
  for (int log2_buffer = 12; log2_buffer <= 31; log2_buffer += step) {
    const size_t buffer = size_t{1} << log2_buffer;  // bytes of one operand
    const size_t n16 = buffer / 16, n2 = buffer / 2;
    auto copy = [&] {
      copy_kernel<<<grid_for(n16, sms), kThreads, 0, stream>>>((uint4*)a, (uint4*)c, n16);
    };
    auto residual = [&] {
      residual_kernel<<<grid_for(n16, sms), kThreads, 0, stream>>>((uint4*)a, (uint4*)b, (uint4*)c,
                                                                   n16);
    };
    auto swiglu = [&] {
      swiglu_kernel<<<grid_for(n16, sms), kThreads, 0, stream>>>((uint4*)a, (uint4*)b, (uint4*)c,
                                                                 n16);
    };
    const int width = 4096, rows = static_cast<int>(std::max<size_t>(1, n2 / width));
    auto norm = [&] { rmsnorm_kernel<<<rows, kThreads, 0, stream>>>((uint4*)a, (uint4*)c, width); };
    points.push_back(point("copy", "copy", 2.0 * buffer, timed(copy)));
    points.push_back(point("elementwise", "residual_add", 3.0 * buffer, timed(residual)));
    points.push_back(point("elementwise", "swiglu", 3.0 * buffer, timed(swiglu)));
    points.push_back(point("elementwise", "rmsnorm", 2.0 * rows * width * 2, timed(norm)));
  }
  BENCH_CHECK_CUDA(cudaGetLastError());
  bench::write_raw(flags.out, "mem_bench", bench::hardware(0, {}), "memory", points);
  return 0;
}
