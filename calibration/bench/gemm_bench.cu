// gemm_bench: cuBLASLt GEMM throughput in bf16 and fp8 (e4m3 in, bf16 out, fp32 accumulate),
// over a generic grid, optional model shapes (--shapes FILE: lines "m n k [batch]"), and
// grouped (strided-batched) GEMMs over expert counts and tokens per expert. Layout TN, as
// cuBLASLt requires for fp8. Each point is the median of 7 timed replays of a CUDA graph of 10
// back-to-back calls, after 3 warm-ups: device time per call with the device-side launch gap
// included, the host's launch rate left out (bench_common.hpp). Writes raw JSON "gemm".
#include <cublasLt.h>
#include <cuda_bf16.h>

#include "bench_common.hpp"

#define BENCH_CHECK_LT(call)                                                           \
  do {                                                                                 \
    cublasStatus_t status_ = (call);                                                   \
    if (status_ != CUBLAS_STATUS_SUCCESS) {                                            \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(status_));                                         \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

namespace {

struct Shape {
  long long m, n, k, batch;
};

constexpr size_t kWorkspaceBytes = size_t{64} << 20;

// Finite pseudo-random values: bf16 in [-1, 1); fp8 e4m3 bytes with the exponent kept below
// the NaN/large range.
__global__ void fill_kernel(unsigned char* data, size_t bytes, bool fp8) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < bytes / 2;
       i += gridDim.x * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u;
    h ^= h >> 13;
    if (fp8) {
      data[2 * i] = static_cast<unsigned char>((h & 0x80) | (h >> 8 & 0x37));
      data[2 * i + 1] = static_cast<unsigned char>((h >> 16 & 0x80) | (h >> 20 & 0x37));
    } else {
      reinterpret_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16((h & 0xffff) / 32768.0f - 1.0f);
    }
  }
}

void set_batch(cublasLtMatrixLayout_t layout, long long batch, long long stride) {
  int count = static_cast<int>(batch);
  BENCH_CHECK_LT(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                  &count, sizeof count));
  BENCH_CHECK_LT(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
}

// Median seconds of one GEMM of `s`; a negative value when cuBLASLt has no algorithm for it.
double time_gemm(cublasLtHandle_t lt, const Shape& s, bool fp8, void* workspace) {
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const size_t in_bytes = fp8 ? 1 : 2;
  unsigned char *a, *b, *d;
  BENCH_CHECK_CUDA(cudaMalloc(&a, s.m * s.k * s.batch * in_bytes));
  BENCH_CHECK_CUDA(cudaMalloc(&b, s.k * s.n * s.batch * in_bytes));
  BENCH_CHECK_CUDA(cudaMalloc(&d, s.m * s.n * s.batch * 2));
  fill_kernel<<<1024, 256>>>(a, s.m * s.k * s.batch * in_bytes, fp8);
  fill_kernel<<<1024, 256>>>(b, s.k * s.n * s.batch * in_bytes, fp8);
  BENCH_CHECK_CUDA(cudaDeviceSynchronize());

  cublasLtMatmulDesc_t op;
  BENCH_CHECK_LT(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  BENCH_CHECK_LT(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  BENCH_CHECK_LT(
      cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  cublasLtMatrixLayout_t la, lb, ld;
  BENCH_CHECK_LT(cublasLtMatrixLayoutCreate(&la, in_type, s.k, s.m, s.k));
  BENCH_CHECK_LT(cublasLtMatrixLayoutCreate(&lb, in_type, s.k, s.n, s.k));
  BENCH_CHECK_LT(cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, s.m, s.n, s.m));
  if (s.batch > 1) {
    set_batch(la, s.batch, s.m * s.k);
    set_batch(lb, s.batch, s.k * s.n);
    set_batch(ld, s.batch, s.m * s.n);
  }
  cublasLtMatmulPreference_t pref;
  BENCH_CHECK_LT(cublasLtMatmulPreferenceCreate(&pref));
  BENCH_CHECK_LT(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes, sizeof kWorkspaceBytes));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heuristic, &found);
  double t = -1;
  if (found > 0) {
    const float alpha = 1.0f, beta = 0.0f;
    const cudaStream_t stream = bench::bench_stream();
    t = bench::median_graph_time_s(
        [&] {
          BENCH_CHECK_LT(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld,
                                        &heuristic.algo, workspace, kWorkspaceBytes, stream));
        },
        stream, 3, 7, 10);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  BENCH_CHECK_CUDA(cudaFree(a));
  BENCH_CHECK_CUDA(cudaFree(b));
  BENCH_CHECK_CUDA(cudaFree(d));
  return t;
}

std::vector<Shape> grid_shapes(bool quick) {
  std::vector<Shape> shapes;
  const std::vector<long long> sizes =
      quick ? std::vector<long long>{512, 4096, 16384}
            : std::vector<long long>{256, 512, 1024, 2048, 4096, 8192, 16384};
  for (long long m : sizes) {
    for (long long n : sizes) {
      for (long long k : {1024LL, 4096LL, 8192LL}) shapes.push_back({m, n, k, 1});
    }
  }
  for (long long experts : {8LL, 64LL}) {
    for (long long tokens : {128LL, 512LL, 2048LL}) {
      shapes.push_back({tokens, 3072, 4096, experts});
      shapes.push_back({tokens, 4096, 1536, experts});
    }
  }
  return shapes;
}

std::vector<Shape> file_shapes(const std::string& path) {
  std::vector<Shape> shapes;
  if (path.empty()) return shapes;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "gemm_bench: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Shape s{0, 0, 0, 1};
    fields >> s.m >> s.n >> s.k;
    if (!(fields >> s.batch)) s.batch = 1;
    if (s.m > 0 && s.n > 0 && s.k > 0 && s.batch > 0) shapes.push_back(s);
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Flags flags = bench::parse_flags(argc, argv, "gemm_bench");
  cublasLtHandle_t lt;
  BENCH_CHECK_LT(cublasLtCreate(&lt));
  void* workspace;
  BENCH_CHECK_CUDA(cudaMalloc(&workspace, kWorkspaceBytes));
  cudaDeviceProp prop{};
  BENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const bool has_fp8 = prop.major > 8 || (prop.major == 8 && prop.minor >= 9);
  auto shapes = grid_shapes(flags.quick);
  for (const Shape& s : file_shapes(flags.shapes)) shapes.push_back(s);

  std::vector<bench::JsonObject> points;
  const bench::Budget budget(flags.max_seconds);
  bool stopped = false;
  for (bool fp8 : {false, true}) {
    if (fp8 && !has_fp8) continue;
    for (const Shape& s : shapes) {
      if (stopped || (stopped = bench::stop_for_budget(budget, "gemm_bench", points.size()))) break;
      const double t = time_gemm(lt, s, fp8, workspace);
      if (t <= 0) {
        std::fprintf(stderr, "gemm_bench: no cuBLASLt algorithm for %lldx%lldx%lld x%lld %s\n", s.m,
                     s.n, s.k, s.batch, fp8 ? "fp8" : "bf16");
        continue;
      }
      bench::JsonObject p;
      p.add("m", s.m).add("n", s.n).add("k", s.k).add("batch", s.batch);
      p.add("dtype", fp8 ? "fp8" : "bf16").add("time_s", t);
      points.push_back(p);
    }
  }
  const std::string cublas = std::to_string(cublasLtGetVersion());
  bench::write_raw(flags.out, "gemm_bench", bench::hardware(0, {{"cublas", cublas}}), "gemm",
                   points);
  cublasLtDestroy(lt);
  return 0;
}
