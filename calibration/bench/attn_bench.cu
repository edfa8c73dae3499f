// attn_bench: fused scaled-dot-product attention (flash attention) forward and backward in bf16,
// through cuDNN 9's backend graph API (cudnn_graph.hpp). Each graph is cuDNN's documented
// fused-attention pattern, built from matmul, pointwise, reduction and reshape operations:
//
//   forward   S = scale · Q Kᵀ, causal mask (row index ≥ column index, else the lowest float),
//             Stats = max + log Σ exp(S − max), P = exp(S − max) / Σ, O = P V
//   backward  P = exp(scale · Q Kᵀ (masked) − Stats), dV = Pᵀ dO, dP = dO Vᵀ,
//             D = rowsum(dO ∘ O), dS = scale · P ∘ (dP − D), dQ = dS K, dK = dSᵀ Q
//             (with GQA, dK and dV summed over each KV head's group of query heads)
//
// Both operands of every matmul are bf16 (P and dS are bf16 virtual tensors), as the fused
// engines require.
// cuDNN's heuristics (mode A) map the graph to its fused flash-attention engine; a shape it
// does not support is skipped with a message on stderr. Tensors are bshd in memory (batch,
// sequence, head, dim), K and V have kv_heads heads (GQA when fewer than heads), s_q = s_kv.
// Each point is the median of 10 timed runs after 3 warm-ups, 3 back-to-back calls per run.
// Batch × sequence is held at 16384 tokens. Writes raw JSON "attention" (calibration/README.md).
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "bench_common.hpp"
#include "cudnn_graph.hpp"

namespace {

using bench::Descriptor;
using bench::Dims;
using bench::GraphBuilder;

struct Shape {
  int64_t batch, heads, kv_heads, seq, head_dim;
  bool causal;
};

// Unique ids of the tensors the caller provides (virtual tensors take ids from 1000 on).
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kLowest,
  kDO,
  kDQ,
  kDK,
  kDV,
  kRowSum,
  kDQAccum
};

// Dims [b, h, s, d] of a bshd tensor and their strides; `transposed` gives [b, h, d, s].
GraphBuilder::TensorSpec bshd(int64_t uid, const Shape& x, int64_t heads, bool transposed = false,
                              cudnnDataType_t type = CUDNN_DATA_BFLOAT16) {
  const int64_t b_stride = x.seq * heads * x.head_dim, s_stride = heads * x.head_dim;
  if (transposed) {
    return {uid, type, {x.batch, heads, x.head_dim, x.seq}, {b_stride, x.head_dim, 1, s_stride}};
  }
  return {uid, type, {x.batch, heads, x.seq, x.head_dim}, {b_stride, x.head_dim, s_stride, 1}};
}

GraphBuilder::TensorSpec scalar(int64_t uid) {
  return {uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true};
}

Dims scores(const Shape& x) {
  return {x.batch, x.heads, x.seq, x.seq};
}
Dims per_row(const Shape& x) {
  return {x.batch, x.heads, x.seq, 1};
}

// The transposed view [b, h, s_kv, s_q] of a score-shaped virtual tensor, in bf16: cuDNN's
// fused engines take both matmul operands in the I/O type.
const Descriptor& transpose_scores(GraphBuilder& g, const Shape& x, const Descriptor& in) {
  const Descriptor& out = g.virtual_tensor({x.batch, x.heads, x.seq, x.seq}, CUDNN_DATA_BFLOAT16,
                                           {x.heads * x.seq * x.seq, x.seq * x.seq, 1, x.seq});
  g.reshape(in, out);
  return out;
}

// Tensors the forward and backward graphs share. K enters twice in the backward pass, as Kᵀ
// (for S) and as K (for dQ): two descriptors with one uid, as for any strided view of memory.
struct Inputs {
  const Descriptor& q;
  const Descriptor& k_transposed;
  const Descriptor& scale;
};

Inputs make_inputs(GraphBuilder& g, const Shape& x) {
  return {g.tensor(bshd(kQ, x, x.heads)), g.tensor(bshd(kK, x, x.kv_heads, true)),
          g.tensor(scalar(kScale))};
}

// scale · Q Kᵀ, masked when causal: the logits both passes start from. The mask keeps key j
// for query i when i ≥ j (s_q = s_kv, so top-left and bottom-right alignment agree).
const Descriptor& masked_logits(GraphBuilder& g, const Shape& x, const Inputs& in) {
  const Descriptor& product = g.virtual_tensor(scores(x));
  g.matmul(in.q, in.k_transposed, product);
  const Descriptor& scaled = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_MUL, product, &in.scale, scaled);
  if (!x.causal) return scaled;
  const Descriptor& row = g.virtual_tensor(scores(x), CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scaled, nullptr, row, CUDNN_DATA_INT32, nullptr, 2);
  const Descriptor& column = g.virtual_tensor(scores(x), CUDNN_DATA_INT32);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, scaled, nullptr, column, CUDNN_DATA_INT32, nullptr, 3);
  const Descriptor& keep = g.virtual_tensor(scores(x), CUDNN_DATA_BOOLEAN);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, &column, keep, CUDNN_DATA_BOOLEAN);
  const Descriptor& lowest = g.tensor(scalar(kLowest));
  const Descriptor& masked = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, scaled, &lowest, masked, CUDNN_DATA_FLOAT, &keep);
  return masked;
}

// Forward graph variants, tried in order until one gets an engine: the softmax output P enters
// the second matmul in bf16 (cuDNN's engines take both operands in the I/O type), written by
// the division itself or by a cast after it.
struct ForwardVariant {
  bool cast_after_softmax;
};
constexpr ForwardVariant kForwardVariants[] = {{false}, {true}};

// `io` is a bf16 copy of the fp32 virtual tensor `in` (a pointwise identity).
const Descriptor& to_bf16(GraphBuilder& g, const Dims& dims, const Descriptor& in) {
  const Descriptor& io = g.virtual_tensor(dims, CUDNN_DATA_BFLOAT16);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, in, nullptr, io);
  return io;
}

void build_forward(GraphBuilder& g, const Shape& x, ForwardVariant variant) {
  const Inputs in = make_inputs(g, x);
  const Descriptor& logits = masked_logits(g, x, in);
  const Descriptor& max = g.virtual_tensor(per_row(x));
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, logits, max);
  const Descriptor& shifted = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_SUB, logits, &max, shifted);
  const Descriptor& exp = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, exp);
  const Descriptor& sum = g.virtual_tensor(per_row(x));
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, exp, sum);
  const Descriptor& log_sum = g.virtual_tensor(per_row(x));
  g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, log_sum);
  const Descriptor& stats = g.tensor({kStats, CUDNN_DATA_FLOAT, per_row(x), {}});
  g.pointwise(CUDNN_POINTWISE_ADD, max, &log_sum, stats);
  const Descriptor& p = g.virtual_tensor(
      scores(x), variant.cast_after_softmax ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16);
  g.pointwise(CUDNN_POINTWISE_DIV, exp, &sum, p);
  const Descriptor& p_io = variant.cast_after_softmax ? to_bf16(g, scores(x), p) : p;
  g.matmul(p_io, g.tensor(bshd(kV, x, x.kv_heads)), g.tensor(bshd(kO, x, x.heads)));
}

// Backward graph variants, tried in this order until one gets an engine: whether the row sum
// D = rowsum(dO ∘ O) is a tensor in memory or virtual, whether dQ is accumulated in fp32
// first (then copied to bf16), and whether P is cast to bf16 before its transpose or by the
// transpose. cuDNN releases differ in which of these their engine matches.
struct BackwardVariant {
  bool row_sum_in_memory;
  bool dq_accumulator;
  bool cast_p;
};
constexpr BackwardVariant kBackwardVariants[] = {{true, false, false},  {true, false, true},
                                                 {true, true, false},   {true, true, true},
                                                 {false, false, false}, {false, false, true}};

// D = rowsum(dO ∘ O).
const Descriptor& output_row_sum(GraphBuilder& g, const Shape& x, const Descriptor& d_out,
                                 bool in_memory) {
  const Descriptor& out = g.tensor(bshd(kO, x, x.heads));
  const Descriptor& product = g.virtual_tensor({x.batch, x.heads, x.seq, x.head_dim});
  g.pointwise(CUDNN_POINTWISE_MUL, d_out, &out, product);
  const Descriptor& row_sum = in_memory ? g.tensor({kRowSum, CUDNN_DATA_FLOAT, per_row(x), {}})
                                        : g.virtual_tensor(per_row(x));
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, product, row_sum);
  return row_sum;
}

// dK or dV (`uid`) = a · b. With GQA (kv_heads < heads) the product has one gradient per
// query head (fp32, virtual) and a sum over each group of heads / kv_heads query heads gives
// the KV head's.
void kv_gradient(GraphBuilder& g, const Shape& x, const Descriptor& a, const Descriptor& b,
                 int64_t uid) {
  const Descriptor& out = g.tensor(bshd(uid, x, x.kv_heads));
  if (x.kv_heads == x.heads) {
    g.matmul(a, b, out);
    return;
  }
  const Descriptor& per_head = g.virtual_tensor({x.batch, x.heads, x.seq, x.head_dim});
  g.matmul(a, b, per_head);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, per_head, out);
}

void build_backward(GraphBuilder& g, const Shape& x, BackwardVariant variant) {
  const Inputs in = make_inputs(g, x);
  const Descriptor& d_out = g.tensor(bshd(kDO, x, x.heads));
  const Descriptor& row_sum = output_row_sum(g, x, d_out, variant.row_sum_in_memory);

  const Descriptor& logits = masked_logits(g, x, in);
  const Descriptor& stats = g.tensor({kStats, CUDNN_DATA_FLOAT, per_row(x), {}});
  const Descriptor& shifted = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_SUB, logits, &stats, shifted);
  const Descriptor& p = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, p);
  const Descriptor& p_for_dv = variant.cast_p ? to_bf16(g, scores(x), p) : p;
  kv_gradient(g, x, transpose_scores(g, x, p_for_dv), d_out, kDV);

  const Descriptor& dp = g.virtual_tensor(scores(x));
  g.matmul(d_out, g.tensor(bshd(kV, x, x.kv_heads, true)), dp);
  const Descriptor& centred = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_SUB, dp, &row_sum, centred);
  const Descriptor& weighted = g.virtual_tensor(scores(x));
  g.pointwise(CUDNN_POINTWISE_MUL, centred, &p, weighted);
  const Descriptor& ds = g.virtual_tensor(scores(x), CUDNN_DATA_BFLOAT16);
  g.pointwise(CUDNN_POINTWISE_MUL, weighted, &in.scale, ds);

  const Descriptor& k = g.tensor(bshd(kK, x, x.kv_heads));
  const Descriptor& dq = g.tensor(bshd(kDQ, x, x.heads));
  if (variant.dq_accumulator) {
    const Descriptor& accumulator = g.tensor(bshd(kDQAccum, x, x.heads, false, CUDNN_DATA_FLOAT));
    g.matmul(ds, k, accumulator);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, accumulator, nullptr, dq);
  } else {
    g.matmul(ds, k, dq);
  }
  kv_gradient(g, x, transpose_scores(g, x, ds), in.q, kDK);
}

// Finite pseudo-random bf16 values in [-1, 1).
__global__ void fill_kernel(__nv_bfloat16* data, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = (static_cast<unsigned>(i) ^ seed) * 2654435761u;
    h ^= h >> 13;
    data[i] = __float2bfloat16((h & 0xffff) / 32768.0f - 1.0f);
  }
}

// Device buffers sized for the largest shape of the sweep, reused by every point.
struct Buffers {
  void *q, *k, *v, *o, *d_out, *dq, *dk, *dv;  // bf16, b·s·h·d elements at most
  void *stats, *row_sum;                       // fp32, b·h·s elements at most
  void* dq_accum;                              // fp32, b·s·h·d
  void* workspace = nullptr;
  int64_t workspace_bytes = 0;
  float scale = 0, lowest = std::numeric_limits<float>::lowest();  // by-value scalars

  Buffers(int64_t elements, int64_t rows) {
    const size_t bf16 = elements * sizeof(__nv_bfloat16), fp32 = elements * sizeof(float);
    for (void** p : {&q, &k, &v, &o, &d_out, &dq, &dk, &dv}) BENCH_CHECK_CUDA(cudaMalloc(p, bf16));
    for (void** p : {&stats, &row_sum}) BENCH_CHECK_CUDA(cudaMalloc(p, rows * sizeof(float)));
    BENCH_CHECK_CUDA(cudaMalloc(&dq_accum, fp32));
    unsigned seed = 1;
    for (void* p : {q, k, v, d_out}) {
      fill_kernel<<<1024, 256>>>(static_cast<__nv_bfloat16*>(p), elements, seed++);
    }
    BENCH_CHECK_CUDA(cudaGetLastError());
    // Zeroed once: the timed calls leave the accumulators as cuDNN does between steps.
    BENCH_CHECK_CUDA(cudaMemset(row_sum, 0, rows * sizeof(float)));
    BENCH_CHECK_CUDA(cudaMemset(dq_accum, 0, fp32));
  }
  void reserve_workspace(int64_t bytes) {
    if (bytes <= workspace_bytes) return;
    BENCH_CHECK_CUDA(cudaFree(workspace));
    BENCH_CHECK_CUDA(cudaMalloc(&workspace, bytes));
    workspace_bytes = bytes;
  }
  // The variant pack of a graph made of the tensors `uids`.
  bench::VariantPack pack(const std::vector<int64_t>& uids) {
    const std::pair<int64_t, void*> all[] = {{kQ, q},
                                             {kK, k},
                                             {kV, v},
                                             {kO, o},
                                             {kStats, stats},
                                             {kScale, &scale},
                                             {kLowest, &lowest},
                                             {kDO, d_out},
                                             {kDQ, dq},
                                             {kDK, dk},
                                             {kDV, dv},
                                             {kRowSum, row_sum},
                                             {kDQAccum, dq_accum}};
    std::vector<std::pair<int64_t, void*>> tensors;
    for (const auto& tensor : all) {
      if (std::find(uids.begin(), uids.end(), tensor.first) != uids.end())
        tensors.push_back(tensor);
    }
    return bench::VariantPack(tensors, workspace);
  }
};

std::vector<int64_t> forward_uids(const Shape& x) {
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kStats, kScale};
  if (x.causal) uids.push_back(kLowest);
  return uids;
}

std::vector<int64_t> backward_uids(const Shape& x, BackwardVariant variant) {
  std::vector<int64_t> uids = {kQ, kK, kV, kO, kStats, kScale, kDO, kDQ, kDK, kDV};
  if (x.causal) uids.push_back(kLowest);
  if (variant.row_sum_in_memory) uids.push_back(kRowSum);
  if (variant.dq_accumulator) uids.push_back(kDQAccum);
  return uids;
}

// Builds the graph `build` describes, plans it, runs it once and returns its median time.
// CudnnError when cuDNN has no engine for it or any call fails.
template <typename Build>
double time_graph(cudnnHandle_t handle, Buffers& buffers, Build build,
                  const std::vector<int64_t>& uids) {
  GraphBuilder g;
  build(g);
  std::string why;
  const bench::Plan plan = bench::make_plan(handle, g.finish(handle), why);
  if (!plan.plan) throw bench::CudnnError(why);
  buffers.reserve_workspace(plan.workspace_bytes);
  const bench::VariantPack pack = buffers.pack(uids);
  pack.execute(handle, plan);
  BENCH_CHECK_CUDA(cudaDeviceSynchronize());
  return bench::median_time_s([&] { pack.execute(handle, plan); }, 3, 10, 3);
}

// NaN or infinity among the first elements of the forward output means the graph did not
// compute attention (a pattern an engine accepted but got wrong): the point is dropped.
bool output_is_finite(const Buffers& buffers, const Shape& x) {
  std::vector<__nv_bfloat16> head(std::min<int64_t>(4096, x.batch * x.seq * x.heads * x.head_dim));
  BENCH_CHECK_CUDA(
      cudaMemcpy(head.data(), buffers.o, head.size() * sizeof head[0], cudaMemcpyDeviceToHost));
  return std::all_of(head.begin(), head.end(),
                     [](__nv_bfloat16 value) { return std::isfinite(__bfloat162float(value)); });
}

std::string describe(const Shape& x) {
  char text[160];
  std::snprintf(text, sizeof text, "b%lld h%lld kv%lld s%lld d%lld %s",
                static_cast<long long>(x.batch), static_cast<long long>(x.heads),
                static_cast<long long>(x.kv_heads), static_cast<long long>(x.seq),
                static_cast<long long>(x.head_dim), x.causal ? "causal" : "full");
  return text;
}

bench::JsonObject point(const Shape& x, const char* pass, double time_s) {
  bench::JsonObject p;
  p.add("batch", static_cast<long long>(x.batch)).add("heads", static_cast<long long>(x.heads));
  p.add("kv_heads", static_cast<long long>(x.kv_heads));
  p.add("seq_q", static_cast<long long>(x.seq)).add("seq_kv", static_cast<long long>(x.seq));
  p.add("head_dim", static_cast<long long>(x.head_dim)).add("causal", x.causal);
  p.add("pass", pass).add("time_s", time_s);
  return p;
}

// The forward point of `x`, then its backward point (which reads the forward's O and Stats).
// Variants of each pass are tried from the one that worked last (`forward`, `backward`) on,
// and the one that works is kept for the next shape.
void measure(cudnnHandle_t handle, Buffers& buffers, const Shape& x, std::size_t& forward,
             std::size_t& variant, std::vector<bench::JsonObject>& points) {
  buffers.scale = 1.0f / std::sqrt(static_cast<float>(x.head_dim));
  std::string why;
  constexpr std::size_t kForward = std::size(kForwardVariants);
  bool measured = false;
  for (std::size_t i = 0; i < kForward && !measured; ++i) {
    const std::size_t v = (forward + i) % kForward;
    try {
      const double t = time_graph(
          handle, buffers, [&](GraphBuilder& g) { build_forward(g, x, kForwardVariants[v]); },
          forward_uids(x));
      if (!output_is_finite(buffers, x)) throw bench::CudnnError("output is not finite");
      points.push_back(point(x, "forward", t));
      forward = v;
      measured = true;
    } catch (const bench::CudnnError& e) {
      why +=
          std::string(why.empty() ? "" : "; ") + "variant " + std::to_string(v) + ": " + e.what();
    }
  }
  if (!measured) {
    std::fprintf(stderr, "attn_bench: forward %s skipped: %s\n", describe(x).c_str(), why.c_str());
    return;
  }
  why.clear();
  constexpr std::size_t kVariants = std::size(kBackwardVariants);
  for (std::size_t i = 0; i < kVariants; ++i) {
    const std::size_t v = (variant + i) % kVariants;
    try {
      const double t = time_graph(
          handle, buffers, [&](GraphBuilder& g) { build_backward(g, x, kBackwardVariants[v]); },
          backward_uids(x, kBackwardVariants[v]));
      points.push_back(point(x, "backward", t));
      variant = v;
      return;
    } catch (const bench::CudnnError& e) {
      why +=
          std::string(why.empty() ? "" : "; ") + "variant " + std::to_string(v) + ": " + e.what();
    }
  }
  std::fprintf(stderr, "attn_bench: backward %s skipped: %s\n", describe(x).c_str(), why.c_str());
}

// 32 query heads (Llama-3-8B's) over kv_heads = 32, 8, 4 (GQA ratios 1, 4, 8), head dims 128
// then 64 (the common one first, for a run cut short by --max-seconds), sequences 512..16384,
// causal and not; batch · sequence = 16384 tokens throughout.
std::vector<Shape> sweep(bool quick) {
  constexpr int64_t kTokens = 16384, kHeads = 32;
  const std::vector<int64_t> head_dims =
      quick ? std::vector<int64_t>{128} : std::vector<int64_t>{128, 64};
  const std::vector<int64_t> ratios =
      quick ? std::vector<int64_t>{1, 8} : std::vector<int64_t>{1, 4, 8};
  const std::vector<int64_t> seqs = quick
                                        ? std::vector<int64_t>{1024, 4096}
                                        : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
  std::vector<Shape> shapes;
  for (int64_t d : head_dims) {
    for (bool causal : {false, true}) {
      for (int64_t ratio : ratios) {
        for (int64_t s : seqs)
          shapes.push_back({kTokens / s, kHeads, kHeads / ratio, s, d, causal});
      }
    }
  }
  return shapes;
}

std::string cudnn_version_text() {  // 91900 -> "9.19.0"
  const size_t v = cudnnGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." +
         std::to_string(v % 100);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Flags flags = bench::parse_flags(argc, argv, "attn_bench");
  const std::vector<Shape> shapes = sweep(flags.quick);
  int64_t elements = 0, rows = 0;
  for (const Shape& x : shapes) {
    elements = std::max(elements, x.batch * x.seq * x.heads * x.head_dim);
    rows = std::max(rows, x.batch * x.heads * x.seq);
  }
  cudnnHandle_t handle;
  try {
    BENCH_CHECK_CUDNN(cudnnCreate(&handle));
  } catch (const bench::CudnnError& e) {
    std::fprintf(stderr, "attn_bench: %s\n", e.what());
    return 1;
  }
  Buffers buffers(elements, rows);
  std::vector<bench::JsonObject> points;
  std::size_t forward = 0, variant = 0;
  const bench::Budget budget(flags.max_seconds);
  for (const Shape& x : shapes) {
    if (bench::stop_for_budget(budget, "attn_bench", points.size())) break;
    measure(handle, buffers, x, forward, variant, points);
  }
  cudnnDestroy(handle);
  if (points.empty()) {
    std::fprintf(stderr, "attn_bench: cuDNN ran no shape; %s not written\n", flags.out.c_str());
    return 1;
  }
  bench::write_raw(flags.out, "attn_bench", bench::hardware(0, {{"cudnn", cudnn_version_text()}}),
                   "attention", points);
  return 0;
}
