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
