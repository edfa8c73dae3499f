#include "sim/hw/kernel_flops.hpp"

#include <catch2/catch.hpp>

using namespace wallsim;

TEST_CASE("a GEMM does 2·m·n·k FLOPs per member of the group", "[hw][flops]") {
  CHECK(gemm_flops({.m = 4096, .n = 8192, .k = 1024}) == 2.0 * 4096 * 8192 * 1024);
  CHECK(gemm_flops({.m = 64, .n = 128, .k = 256, .batch = 8}) == 8 * 2.0 * 64 * 128 * 256);
}

TEST_CASE("a GEMM reads A and B and writes C once", "[hw][flops]") {
  const GemmShape shape{.m = 100, .n = 200, .k = 300};
  // bf16: (m·k + k·n + m·n) · 2 bytes.
  CHECK(gemm_bytes(shape, Dtype::kBf16) == (100.0 * 300 + 300.0 * 200 + 100.0 * 200) * 2);
  // fp8: one-byte inputs, bf16 output.
  CHECK(gemm_bytes(shape, Dtype::kFp8) == (100.0 * 300 + 300.0 * 200) * 1 + 100.0 * 200 * 2);
}

TEST_CASE("attention forward does 4·b·h·s_q·s_kv·d FLOPs", "[hw][flops]") {
  const AttentionShape shape{.batch = 2,
                             .heads = 16,
                             .kv_heads = 4,
                             .seq_q = 8192,
                             .seq_kv = 8192,
                             .head_dim = 128,
                             .causal = false};
  // Q·Kᵀ and P·V, 2·s_q·s_kv·d each, per batch element and query head; kv_heads do not matter.
  CHECK(attention_forward_flops(shape) == 4.0 * 2 * 16 * 8192.0 * 8192 * 128);
}

TEST_CASE("a causal mask halves attention FLOPs when queries and keys have one length",
          "[hw][flops]") {
  AttentionShape shape{.batch = 1,
                       .heads = 8,
                       .kv_heads = 8,
                       .seq_q = 4096,
                       .seq_kv = 4096,
                       .head_dim = 128,
                       .causal = false};
  const double full = attention_forward_flops(shape);
  shape.causal = true;
  CHECK(attention_forward_flops(shape) == Approx(full / 2));
}

TEST_CASE("a causal query block against a longer key range keeps all but its own triangle",
          "[hw][flops]") {
  // Bottom-right aligned: 1024 queries see the 3072 earlier keys in full plus a 1024-key
  // triangle (half kept): (3072 + 512) / 4096 = 1 − 1024 / (2·4096).
  CHECK(causal_kept_fraction(1024, 4096) == Approx(1.0 - 1024.0 / 8192.0));
  CHECK(causal_kept_fraction(4096, 1024) == Approx(1024.0 / 8192.0));
}

TEST_CASE("attention backward counts 2.5 times the forward FLOPs", "[hw][flops]") {
  const AttentionShape shape{.batch = 1,
                             .heads = 32,
                             .kv_heads = 8,
                             .seq_q = 2048,
                             .seq_kv = 2048,
                             .head_dim = 128,
                             .causal = true};
  // FlashAttention's benchmark convention (Megatron's model FLOPs use 2×).
  CHECK(attention_backward_flops(shape) == Approx(2.5 * attention_forward_flops(shape)));
}
