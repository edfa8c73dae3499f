// Shapes of the kernels GpuModel times, and their FLOP and byte counts (pure formulas).
//
// FLOPs count one multiply-add as 2 FLOPs, as every published TFLOP/s figure does.
#pragma once

#include <cstdint>

#include "sim/hw/dtype.hpp"

namespace wallsim {

// C[m×n] = A[m×k] · B[k×n], `batch` independent GEMMs of this shape run as one kernel
// (a grouped GEMM, e.g. the experts of an MoE layer).
struct GemmShape {
  std::int64_t m;
  std::int64_t n;
  std::int64_t k;
  std::int64_t batch = 1;
};

// One flash-attention call: `heads` query heads over `kv_heads` key/value heads (GQA),
// seq_q queries attending to seq_kv keys, every head of width head_dim (for q, k and v).
struct AttentionShape {
  std::int64_t batch;
  std::int64_t heads;
  std::int64_t kv_heads;
  std::int64_t seq_q;
  std::int64_t seq_kv;
  std::int64_t head_dim;
  bool causal;
};

// 2·m·n·k·batch.
constexpr double gemm_flops(const GemmShape& s) {
  return 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) *
         static_cast<double>(s.batch);
}

// HBM traffic of a GEMM that reads A and B once and writes C once (the large-tile kernels
// reuse operands from L2/shared memory, so this is the floor a memory-bound GEMM pays).
// Inputs are in `dtype`; an fp8 or fp4 GEMM writes its output in bf16, as Transformer Engine's
// quantized GEMMs do (a quantized output would need the next layer's scale), every other dtype
// writes `dtype`.
constexpr double gemm_bytes(const GemmShape& s, Dtype dtype) {
  const double in_bytes = dtype_bytes(dtype);
  const bool quantized = dtype == Dtype::kFp8 || dtype == Dtype::kFp4;
  const double out_bytes = quantized ? dtype_bytes(Dtype::kBf16) : in_bytes;
  const double m = static_cast<double>(s.m), n = static_cast<double>(s.n);
  const double k = static_cast<double>(s.k);
  return static_cast<double>(s.batch) * ((m * k + k * n) * in_bytes + m * n * out_bytes);
}

// Fraction of the seq_q×seq_kv score matrix a causal mask keeps, with the mask aligned at the
// bottom-right (query i sees keys up to i + seq_kv − seq_q, FlashAttention ≥ 2.1's convention),
// in the continuum limit: 1/2 when seq_q == seq_kv; 1 − seq_q/(2·seq_kv) for a short query
// block against a longer key range; seq_kv/(2·seq_q) the other way round.
constexpr double causal_kept_fraction(std::int64_t seq_q, std::int64_t seq_kv) {
  if (seq_q <= 0 || seq_kv <= 0) return 0.0;
  const double q = static_cast<double>(seq_q), kv = static_cast<double>(seq_kv);
  return q <= kv ? 1.0 - q / (2.0 * kv) : kv / (2.0 * q);
}

// Forward FLOPs of attention, FlashAttention's convention: two GEMMs (Q·Kᵀ and P·V), each
// 2·b·h·s_q·s_kv·d, so 4·b·h·s_q·s_kv·d, times the kept fraction when causal (one half for
// s_q == s_kv). Softmax FLOPs are not counted. kv_heads does not change the count: GQA shares
// K and V between query heads but every query head still does its own products.
constexpr double attention_forward_flops(const AttentionShape& s) {
  const double full = 4.0 * static_cast<double>(s.batch) * static_cast<double>(s.heads) *
                      static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv) *
                      static_cast<double>(s.head_dim);
  return s.causal ? full * causal_kept_fraction(s.seq_q, s.seq_kv) : full;
}

// Backward = 2.5 × forward, FlashAttention's convention (5 GEMMs against the forward's 2: dV,
// dP, dQ, dK and the recomputed S). Megatron's num_floating_point_operations counts
// backward as 2 × forward instead; the model FLOPs of a run (MFU) use Megatron's count, the
// kernel time here uses this one because the attention efficiency tables were measured with it.
constexpr double attention_backward_flops(const AttentionShape& s) {
  return 2.5 * attention_forward_flops(s);
}

}  // namespace wallsim
