#include "models/activation_memory.hpp"

#include <catch2/catch.hpp>

#include "test_models.hpp"

using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

// GPT-3 175B as in Korthikanti et al. 2022 Table 3: a = 96, h = 12288, s = 2048, b = 1, t = 8.
constexpr double s = 2048, b = 1, h = 12288, a = 96, t = 8;
const double sbh = s * b * h;

ActivationSetting setting(std::int64_t tp, bool sp, Recompute recompute, bool core_attn = false) {
  ActivationSetting x;
  x.seq_len = 2048;
  x.micro_batch = 1;
  x.tp = tp;
  x.sequence_parallel = sp;
  x.recompute = recompute;
  x.recompute_core_attention = core_attn;
  x.flash_attention = false;  // Table 2 stores the s² attention scores
  return x;
}

const ModelSpec kGpt3 = gpt_model(96, 12288, 96);

}  // namespace

TEST_CASE("Korthikanti Table 2, no parallelism: sbh(34 + 5as/h)", "[models][activations]") {
  CHECK(layer_activation_bytes(kGpt3, setting(1, false, Recompute::none)) ==
        Approx(sbh * (34 + 5 * a * s / h)));
}

TEST_CASE("Korthikanti Table 2, tensor parallel: sbh(10 + 24/t + 5as/ht)",
          "[models][activations]") {
  CHECK(layer_activation_bytes(kGpt3, setting(8, false, Recompute::none)) ==
        Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
}

TEST_CASE("Korthikanti Table 2, tensor + sequence parallel: sbh(34/t + 5as/ht)",
          "[models][activations]") {
  CHECK(layer_activation_bytes(kGpt3, setting(8, true, Recompute::none)) ==
        Approx(sbh * (34 / t + 5 * a * s / (h * t))));
}

TEST_CASE("Korthikanti Table 2, TP + selective recompute: sbh(10 + 24/t)",
          "[models][activations]") {
  CHECK(layer_activation_bytes(kGpt3, setting(8, false, Recompute::selective, true)) ==
        Approx(sbh * (10 + 24 / t)));
}

TEST_CASE("Korthikanti Table 2, TP + SP + selective recompute: 34·sbh/t", "[models][activations]") {
  CHECK(layer_activation_bytes(kGpt3, setting(8, true, Recompute::selective, true)) ==
        Approx(sbh * 34 / t));
}

TEST_CASE("Korthikanti Table 2, full recompute keeps only the layer input: 2sbh",
          "[models][activations]") {
  CHECK(layer_activation_bytes(kGpt3, setting(8, false, Recompute::full)) == Approx(2 * sbh));
  // With SP the stored input is the sequence shard.
  CHECK(layer_activation_bytes(kGpt3, setting(8, true, Recompute::full)) == Approx(2 * sbh / t));
}

TEST_CASE("sequence parallelism divides the 10sbh TP leaves replicated by t",
          "[models][activations]") {
  const double without = layer_activation_bytes(kGpt3, setting(8, false, Recompute::none));
  const double with = layer_activation_bytes(kGpt3, setting(8, true, Recompute::none));
  CHECK(without - with == Approx(10 * sbh * (1 - 1 / t)));
}

TEST_CASE("flash attention stores no s² scores: the selective-recompute bytes",
          "[models][activations]") {
  ActivationSetting flash = setting(8, true, Recompute::none);
  flash.flash_attention = true;
  CHECK(layer_activation_bytes(kGpt3, flash) == Approx(sbh * 34 / t));
}

TEST_CASE("GQA, SwiGLU and no dropout change the terms as the shapes say",
          "[models][activations]") {
  // Llama 3 70B, t = 8, SP, flash: per token (bytes) norm inputs 2·2h, QKV and FC1 inputs 2·2h,
  // Q 2·n·d, K and V 2·g·d each, projection input 2·n·d, SwiGLU input 2·2f, FC2 input 2f;
  // no dropout masks. Everything ÷ t.
  const ModelSpec m = llama3_70b();
  ActivationSetting x = setting(8, true, Recompute::none);
  x.seq_len = 8192;
  x.flash_attention = true;
  const double H = 8192, nd = 64 * 128, gd = 8 * 128, f = 28672, tokens = 8192;
  const double per_token = 8 * H + 2 * nd + 4 * gd + 2 * nd + 4 * f + 2 * f;
  CHECK(layer_activation_bytes(m, x) == Approx(tokens * per_token / 8));
}

TEST_CASE("context parallelism gives each rank s/c tokens", "[models][activations]") {
  ActivationSetting x = setting(8, true, Recompute::selective, true);
  const double whole = layer_activation_bytes(kGpt3, x);
  x.cp = 4;
  CHECK(layer_activation_bytes(kGpt3, x) == Approx(whole / 4));
}

TEST_CASE("selective mlp and layernorm recompute drop their tensors", "[models][activations]") {
  ActivationSetting x = setting(1, false, Recompute::selective, true);
  const double base = layer_activation_bytes(kGpt3, x);  // 34sbh
  x.recompute_mlp = true;                                // GeLU input 8sbh and FC2 input 8sbh
  CHECK(base - layer_activation_bytes(kGpt3, x) == Approx(16 * sbh));
  x.recompute_norms = true;  // QKV and FC1 inputs, 2sbh each
  CHECK(base - layer_activation_bytes(kGpt3, x) == Approx(20 * sbh));
}

TEST_CASE("the output layer keeps fp32 logits over the padded vocabulary",
          "[models][activations]") {
  // Megatron Formula A's last-stage term with SP: 4·s·b·h·(1 + V/h)/t.
  const double V = 51200;
  CHECK(output_activation_bytes(kGpt3, setting(8, true, Recompute::none)) ==
        Approx(4 * sbh * (1 + V / h) / t));
  // First stage: 8-byte token ids plus the 1-byte embedding-dropout mask (÷t with SP).
  CHECK(embedding_activation_bytes(kGpt3, setting(8, true, Recompute::none)) ==
        Approx(8 * s * b + sbh / t));
}
