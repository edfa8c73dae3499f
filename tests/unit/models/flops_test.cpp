#include "models/flops.hpp"

#include <catch2/catch.hpp>

#include "test_models.hpp"

using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

// h = 4, n = 2 heads of d = 2, g = 1 kv head, f = 8: small enough to count by hand.
ModelSpec tiny(Activation activation) {
  ModelSpec m = gpt_model(1, 4, 2, 100);
  m.kv_heads = 1;
  m.ffn_hidden = 8;
  m.activation = activation;
  return m;
}

double rel(double a, double b) {
  return std::abs(a - b) / std::abs(b);
}

}  // namespace

TEST_CASE("attention projections of one layer cost 6 FLOPs per weight per token",
          "[models][flops]") {
  // Q: h·n·d = 4·4 = 16 MACs, K and V: h·g·d = 8 each, O: n·d·h = 16 -> 48 MACs forward;
  // 2 FLOPs per MAC, forward + data-grad + weight-grad = 3 passes: 48·2·3 = 288.
  CHECK(attention_linear_flops_per_token(tiny(Activation::gelu)) == 288.0);
}

TEST_CASE("core attention is QK^T plus AV, halved for the causal mask", "[models][flops]") {
  // s = 8: QK^T and AV are s·n·d = 32 MACs per token each -> 64 MACs, 128 FLOPs forward,
  // 384 for three passes; the causal mask halves it to 192.
  const ModelSpec m = tiny(Activation::gelu);
  CHECK(attention_core_flops_per_token(m, 8, /*causal=*/false) == 384.0);
  CHECK(attention_core_flops_per_token(m, 8) == 192.0);
}

TEST_CASE("the MLP has two matrices, three with SwiGLU", "[models][flops]") {
  // GeLU: h·f twice = 64 MACs -> 64·6 = 384; SwiGLU: 96 MACs -> 576.
  CHECK(mlp_flops_per_token(tiny(Activation::gelu)) == 384.0);
  CHECK(mlp_flops_per_token(tiny(Activation::squared_relu)) == 384.0);
  CHECK(mlp_flops_per_token(tiny(Activation::swiglu)) == 576.0);
}

TEST_CASE("the logits GEMM uses the vocabulary padded to 128·tp", "[models][flops]") {
  // V = 100 pads to 128 (tp 1) and to 1024 (tp 8): 6·h·V.
  const ModelSpec m = tiny(Activation::gelu);
  CHECK(logits_flops_per_token(m, 1) == 6.0 * 4 * 128);
  CHECK(logits_flops_per_token(m, 8) == 6.0 * 4 * 1024);
}

TEST_CASE("non-causal GPT FLOPs equal Korthikanti's 72·B·s·l·h²·(1 + s/6h + V/12hl)",
          "[models][flops]") {
  for (const ModelSpec& m :
       {gpt_model(96, 12288, 96), gpt_model(48, 6144, 64), gpt_model(128, 25600, 160)}) {
    const double B = 64, s = 2048, l = static_cast<double>(m.layers);
    const double h = static_cast<double>(m.hidden), V = 51200;
    const double korthikanti = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * h * l));
    const auto f = model_flops_breakdown(m, 2048, 64, 8, /*causal=*/false);
    CHECK(rel(f.total(), korthikanti) < 1e-12);
    // Megatron halves core attention for the causal mask: s/6h becomes s/12h.
    const double megatron = 72 * B * s * l * h * h * (1 + s / (12 * h) + V / (12 * h * l));
    CHECK(rel(model_flops_per_iteration(m, 2048, 64, 8), megatron) < 1e-12);
  }
}

TEST_CASE("model FLOPs equal Megatron's num_floating_point_operations for GQA + SwiGLU",
          "[models][flops]") {
  // megatron_formulas.md §4 with L_m = M = 0:
  //   F = T·[6h·φ·f·L + A_lin·L + 6hV] + B·s²·A_core·L,
  //   A_lin = 6·[h·(n·d + 2·g·d) + n·d·h], A_core = 6·n·d, φ = 3, V padded to 128·t.
  const ModelSpec m = llama3_70b();
  const double B = 512, s = 8192, T = B * s, L = 80, h = 8192, f = 28672;
  const double n = 64, d = 128, g = 8, V = 129024;  // 128256 padded: ceil(128256/1024)·1024
  const double a_lin = 6 * (h * (n * d + 2 * g * d) + n * d * h);
  const double expected =
      T * (6 * h * 3 * f * L + a_lin * L + 6 * h * V) + B * s * s * 6 * n * d * L;
  CHECK(rel(model_flops_per_iteration(m, 8192, 512, 8), expected) < 1e-9);
}

TEST_CASE("hardware FLOPs add the recomputed forward work", "[models][flops]") {
  const ModelSpec m = gpt_model(96, 12288, 96);
  TrainingSpec t = training(2048, 1, 64);
  const auto parts = model_flops_breakdown(m, 2048, 64, 8);
  const double model = parts.total();

  CHECK(iteration_flops(m, t, 8, 64).hardware_per_iteration == model);
  t.recompute = Recompute::full;  // every layer's forward again (not the logits)
  const double full = iteration_flops(m, t, 8, 64).hardware_per_iteration;
  CHECK(rel(full, model + (model - parts.logits) / 3) < 1e-12);
  t.recompute = Recompute::selective;  // default modules: core attention's forward
  const auto selective = iteration_flops(m, t, 8, 64);
  CHECK(rel(selective.hardware_per_iteration, model + parts.attention_core / 3) < 1e-12);
  // The recomputed forward of causal core attention: QK^T and AV, s²·n·d MACs each per
  // sequence and layer, halved by the mask -> 2·s²·n·d FLOPs; B = 64 sequences, L = 96.
  // (Korthikanti et al. quote HFU/MFU = 1 + s/6h, which charges the whole non-causal core
  // attention again; wallsim counts the work actually repeated.)
  CHECK(selective.recompute_per_iteration == Approx(64.0 * 2048 * 2048 * 2 * 12288 * 96));
}

TEST_CASE("per-token and per-GPU figures divide the iteration count", "[models][flops]") {
  const auto r = iteration_flops(llama3_70b(), training(8192, 1, 512), 8, 1024);
  CHECK(r.tokens == 512.0 * 8192);
  CHECK(r.model_per_token == Approx(r.model_per_iteration / r.tokens));
  CHECK(r.model_per_gpu == Approx(r.model_per_iteration / 1024));
}

namespace {

// tiny(gelu) with an MoE FFN: E = 4 experts of f_e = 3, top-2, shared experts f_s = 5.
ModelSpec tiny_moe() {
  ModelSpec m = tiny(Activation::gelu);
  MoeSpec moe;
  moe.experts = 4;
  moe.topk = 2;
  moe.ffn_hidden = 3;
  moe.shared_ffn_hidden = 5;
  m.moe = moe;
  return m;
}

// tiny(gelu) with MLA: r_q = 3, r_kv = 2, d_qk = 2, d_r = 1, d_v = 2 on h = 4, n = 2.
ModelSpec tiny_mla(bool q_lora) {
  ModelSpec m = tiny(Activation::gelu);
  MlaSpec mla;
  if (q_lora) mla.q_lora_rank = 3;
  mla.kv_lora_rank = 2;
  mla.qk_head_dim = 2;
  mla.qk_rope_head_dim = 1;
  mla.v_head_dim = 2;
  m.mla = mla;
  m.kv_heads = 2;
  return m;
}

}  // namespace

TEST_CASE("an MoE FFN costs k routed experts plus the shared experts, no router GEMM",
          "[models][flops][moe]") {
  // 6·h·(φ·f_e·k + φ·f_s) = 6·4·(2·3·2 + 2·5) = 24·22 = 528 (megatron_formulas.md §4).
  const ModelSpec m = tiny_moe();
  CHECK(moe_mlp_flops_per_token(m) == 528.0);
  CHECK(routed_experts_flops_per_token(m) == 288.0);  // 24·12
  CHECK(layer_mlp_flops_per_token(m, 0) == 528.0);
  ModelSpec dense_first = m;
  dense_first.layers = 2;
  dense_first.moe->first_dense_layers = 1;
  CHECK(layer_mlp_flops_per_token(dense_first, 0) == mlp_flops_per_token(m));  // 6·4·2·8 = 384
  CHECK(mlp_flops_per_token(m) == 384.0);
}

TEST_CASE("MLA attention linear FLOPs follow Megatron's latent projections",
          "[models][flops][mla]") {
  // With q-LoRA: Q = r_q·(h + n·(d_qk + d_r) + 1) = 3·(4 + 6 + 1) = 33,
  // KV = r_kv·(h + n·(d_qk + d_v) + 1) + h·d_r = 2·(4 + 8 + 1) + 4 = 30, O = n·d_v·h = 16:
  // 6·79 = 474. Without: Q = h·n·(d_qk + d_r) = 24, so 6·70 = 420.
  CHECK(attention_linear_flops_per_token(tiny_mla(true)) == 474.0);
  CHECK(attention_linear_flops_per_token(tiny_mla(false)) == 420.0);
  // Core: 6·[n·(d_qk + d_r)/2 + n·d_v/2]·s = 6·(3 + 2)·10 = 300 causal, 600 without the mask.
  CHECK(attention_core_flops_per_token(tiny_mla(true), 10) == 300.0);
  CHECK(attention_core_flops_per_token(tiny_mla(true), 10, false) == 600.0);
}

TEST_CASE("DeepSeek-V3 FLOPs: Megatron's formula with MoE, MLA and one MTP layer",
          "[models][flops][moe]") {
  // megatron_formulas.md §4 with L_d = 3, L_m = 58, M = M_m = 1 (the last layer is MoE), SwiGLU
  // φ = 3, V = 129280 (a multiple of 128), s = 4096, B = 1:
  //   F/T = 6h·(3·f·3 + 3·(f_e·k + f_s)·59) + A_lin·62 + 6·(3h + 2h²) + 6hV·2 + s·A_core·62
  const double h = 7168, n = 128, s = 4096;
  const double mlp = 6 * h * (3 * 18432 * 3 + 3 * (2048 * 8 + 2048) * 59);
  const double a_lin =
      6 * (1536 * (h + n * 192 + 1) + 512 * (h + n * 256 + 1) + h * 64 + n * 128 * h);
  const double a_core = 6 * (n * 192 / 2 + n * 128 / 2);
  const double per_token =
      mlp + a_lin * 62 + 6 * (3 * h + 2 * h * h) + 6 * h * 129280 * 2 + s * a_core * 62;
  const FlopsBreakdown f = model_flops_breakdown(deepseek_v3(), 4096, 1, 1);
  CHECK(rel(f.total(), s * per_token) < 1e-12);
  CHECK(rel(f.routed_experts, s * 6 * h * 3 * 2048 * 8 * 59) < 1e-12);
  // ≈ 2.60e11 FLOPs per token: about 6·37B active parameters plus attention over 4k tokens.
  CHECK(f.total() / s == Approx(2.59993e11).epsilon(1e-5));
}

TEST_CASE("Mixtral 8x7B FLOPs: 2 of 8 experts per token in every layer", "[models][flops][moe]") {
  // F/T = L·(A_lin + 6h·3·f_e·k) + 6hV + s·6nd·L, GQA A_lin = 6·(h·(nd + 2gd) + ndh).
  const double h = 4096, s = 4096, L = 32;
  const double a_lin = 6 * (h * (4096 + 2 * 1024) + 4096 * h);
  const double per_token = L * (a_lin + 6 * h * 3 * 14336 * 2) + 6 * h * 32000 + s * 6 * 4096 * L;
  CHECK(rel(model_flops_per_iteration(mixtral_8x7b(), 4096, 1, 1), s * per_token) < 1e-12);
  CHECK(per_token == Approx(7.970646e10).epsilon(1e-6));  // ≈ 6·12.9B active + attention
}
