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

TEST_CASE("all-to-all CP keeps the attention output twice: before and after its all-to-all",
          "[models][activations]") {
  // Transformer Engine >= 2.8's all-to-all CP saves the head-sharded output O for the fused
  // kernel's backward, and the projection saves O after the all-to-all: one more bf16 tensor
  // of s/c·b·h elements, split over t like the other attention tensors (GPT-3: q = h).
  ActivationSetting x = setting(8, true, Recompute::none);
  x.flash_attention = true;
  x.cp = 4;
  const double ring = layer_activation_bytes(kGpt3, x);
  x.cp_a2a = 4;
  CHECK(layer_activation_bytes(kGpt3, x) - ring == Approx(2 * sbh / 4 / t));
  CHECK(ring == Approx(sbh * 34 / t / 4));  // the p2p ring keeps one copy, as without CP
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

TEST_CASE("with Transformer Engine's fused cross-entropy the output layer keeps bf16 logits",
          "[models][activations]") {
  // The Triton kernels keep the bf16 logits (2 bytes) instead of the fp32 softmax (4):
  // 4·s·b·h/t for the norm plus 2·s·b·V/t.
  const double V = 51200;
  ActivationSetting x = setting(8, true, Recompute::none);
  x.logits_kept_bytes = cross_entropy_kernels(CrossEntropyFusion::kTe).kept_bytes_per_logit;
  CHECK(output_activation_bytes(kGpt3, x) == Approx((4 * sbh + 2 * sbh * V / h) / t));
}

namespace {

ActivationSetting flash_setting(std::int64_t seq_len, std::int64_t tp, bool sp) {
  ActivationSetting x;
  x.seq_len = seq_len;
  x.tp = tp;
  x.sequence_parallel = sp;
  return x;
}

// Mixtral 8x7B with its dense FFN as wide as k routed experts together (k·f_e = 2·14336).
ModelSpec mixtral_dense_equivalent() {
  ModelSpec m = mixtral_8x7b();
  m.moe.reset();
  m.ffn_hidden = 2 * 14336;
  return m;
}

}  // namespace

TEST_CASE("an MoE layer keeps the dense MLP of width k·f_e plus router, combine and FC1 rows",
          "[models][activations][moe]") {
  // Uniform routing, t = t_e = 1: the k·T expert rows keep act input 2·(2f_e) and FC2 input
  // 2f_e each, i.e. a dense SwiGLU MLP of width k·f_e; on top, per token, the router's 6E bytes
  // (bf16 logits, fp32 scores), the k dispatched rows' fp32 probabilities k·4 and the experts'
  // FC1 inputs k·2h (a dense MLP shares its FC1 input with the norm output).
  const double T = 4096, h = 4096, E = 8, k = 2;
  ActivationSetting s = flash_setting(4096, 1, false);
  const double extra = T * (6 * E + k * 4 + k * 2 * h);
  CHECK(layer_activation_bytes(mixtral_8x7b(), s, 0) ==
        Approx(layer_activation_bytes(mixtral_dense_equivalent(), s) + extra).epsilon(1e-12));
  // Hand total per token: attention 4h + (2·4096 + 4·1024 + 2·4096) = 36,864; MoE 4h + 6E = 16,432;
  // probabilities 2·4 = 8; experts 2·(2h + 6·14336) = 188,416 -> 241,720 bytes per token.
  CHECK(layer_activation_bytes(mixtral_8x7b(), s, 0) == T * 241720);
  // Without memory-efficient permutation the combine also keeps each row's output, k·2h more:
  // 241,720 + 2·8192 = 258,104.
  s.keep_expert_outputs = true;
  CHECK(layer_activation_bytes(mixtral_8x7b(), s, 0) == T * 258104);
}

TEST_CASE("recomputing moe_act drops the routed experts' FC2 input only",
          "[models][activations][moe]") {
  // Mixtral as above (241,720 bytes per token): the k = 2 routed rows' FC2 inputs, 2·f_e bytes
  // each, are recomputed from the kept FC1 output: 241,720 - 2·2·14336 = 184,376. `mlp` already
  // drops both the activation and FC2 inputs, so adding moe_act to it changes nothing.
  TrainingSpec run = training(4096, 1, 8);
  run.recompute = Recompute::selective;
  run.recompute_modules = {"moe_act"};
  CHECK(layer_activation_bytes(mixtral_8x7b(), activation_setting(run, 1, 1, false), 0) ==
        4096.0 * 184376);
  run.recompute_modules = {"mlp"};
  const double mlp =
      layer_activation_bytes(mixtral_8x7b(), activation_setting(run, 1, 1, false), 0);
  run.recompute_modules = {"mlp", "moe_act"};
  CHECK(layer_activation_bytes(mixtral_8x7b(), activation_setting(run, 1, 1, false), 0) == mlp);
  // The training key turns the older combine back on: k·2h = 16,384 more per token.
  run.recompute_modules = {"moe_act"};
  run.moe_memory_efficient_permutation = false;
  CHECK(layer_activation_bytes(mixtral_8x7b(), activation_setting(run, 1, 1, false), 0) ==
        4096.0 * (184376 + 16384));
}

TEST_CASE("with SP and t_e = t the expert activations shard like a TP MLP",
          "[models][activations][moe]") {
  // t = t_e = 4 with SP: each GPU routes T/t tokens; the ETP group gathers t_e·k·T/t = k·T rows of
  // width f_e/t. The router and probability terms divide by t, the experts' FC1 input k·T·2h does
  // not.
  const double T = 4096, h = 4096, E = 8, k = 2, t = 4;
  ActivationSetting s = flash_setting(4096, 4, true);
  s.etp = 4;
  const double extra = T / t * (6 * E + k * 4) + k * T * 2 * h;
  CHECK(layer_activation_bytes(mixtral_8x7b(), s, 0) ==
        Approx(layer_activation_bytes(mixtral_dense_equivalent(), s) + extra).epsilon(1e-12));
}

TEST_CASE("a capacity factor pads every expert to C = ceil(T·k/E·cf) rows",
          "[models][activations][moe]") {
  // s = 10 tokens, k = 2, E = 8, cf = 1: C = ceil(20/8) = 3, so 8·3 = 24 rows instead of 20.
  // Each row keeps its probability (4) and expert FC1 input 2h, act input 4f_e, FC2 input 2f_e.
  const double h = 4096, f = 14336;
  const ActivationSetting s = flash_setting(10, 1, false);
  const double dropless = layer_activation_bytes(mixtral_8x7b(), s, 0);
  ModelSpec padded = mixtral_8x7b();
  padded.moe->capacity_factor = 1.0;
  CHECK(layer_activation_bytes(padded, s, 0) - dropless ==
        Approx(4 * (4 + (2 * h + 6 * f))).epsilon(1e-12));
}

TEST_CASE("router imbalance loads the busiest EP rank's experts", "[models][activations][moe]") {
  // ep = 2, loads 3,1,1,1 | 1,1,1,1: rank 0 gets 6/10 of the rows, 1.2× an even split.
  const double T = 4096, h = 4096, f = 14336, k = 2;
  ActivationSetting s = flash_setting(4096, 1, false);
  s.ep = 2;
  const double uniform = layer_activation_bytes(mixtral_8x7b(), s, 0);
  ModelSpec skewed = mixtral_8x7b();
  skewed.moe->imbalance.kind = RouterImbalance::Kind::loads;
  skewed.moe->imbalance.loads = {3, 1, 1, 1, 1, 1, 1, 1};
  CHECK(layer_activation_bytes(skewed, s, 0) - uniform ==
        Approx(0.2 * k * T * (2 * h + 6 * f)).epsilon(1e-12));
}

TEST_CASE("dense layers of an MoE model and dense models are unchanged",
          "[models][activations][moe]") {
  const ActivationSetting s = flash_setting(4096, 8, true);
  ModelSpec v3 = deepseek_v3();
  CHECK(layer_activation_bytes(v3, s, 0) == layer_activation_bytes(v3, s));
  CHECK(layer_activation_bytes(v3, s, 3) > layer_activation_bytes(v3, s, 2));
  CHECK(layer_activation_bytes(kGpt3, s, 5) == layer_activation_bytes(kGpt3, s));
}

TEST_CASE("MLA keeps its latents with the norm tensors and Q, K, V per head",
          "[models][activations][mla]") {
  // h = 4, n = 2, r_q = 3, r_kv = 2, d_qk = 2, d_r = 1, d_v = 2, f = 8 GeLU, no dropout, s = 10:
  // replicated 2h + 2h (norm and down-projection inputs) + 2·3 + 2·3 (q latent, its norm output)
  //   + 2·(2 + 1) (kv latent, RoPE key) + 2·2 (kv norm output) = 38;
  // sharded Q 2·6 + K 2·6 + V 2·4 + projection input 2·4 = 40; MLP 4h + 2·8 + 2·8 = 48.
  ModelSpec m = gpt_model(1, 4, 2, 100);
  m.hidden_dropout = 0;
  m.attention_dropout = 0;
  m.ffn_hidden = 8;
  MlaSpec mla;
  mla.q_lora_rank = 3;
  mla.kv_lora_rank = 2;
  mla.qk_head_dim = 2;
  mla.qk_rope_head_dim = 1;
  mla.v_head_dim = 2;
  m.mla = mla;
  CHECK(layer_activation_bytes(m, flash_setting(10, 1, false)) == 10 * (38 + 40 + 48));
}

namespace {

// A GPT layer without dropout under a precision recipe, flash or unfused attention, t = 1.
double gpt_layer_bytes(const std::string& precision, bool flash) {
  ModelSpec m = gpt_model(2, 4096, 32);
  m.hidden_dropout = 0;
  m.attention_dropout = 0;
  TrainingSpec run = training(2048, 1, 8);
  const Precision p = *precision_from_name(precision);
  run.precision = p.gemm_dtype;
  run.quantization = p.quantization;
  run.flash_attention = flash;
  return layer_activation_bytes(m, activation_setting(run, 1, 1, false));
}

}  // namespace

TEST_CASE("FP8 saves 1-byte copies of the GEMM inputs: a GPT layer keeps 27·sbh, not 32·sbh",
          "[models][activations]") {
  // bf16 without dropout, flash attention (Korthikanti's 34·sbh less the two dropout masks):
  // norms 4h, QKV input 2h, Q K V 6h, projection input 2h, FC1 input 2h, GeLU input 8h, FC2
  // input 8h = 32h per token. FP8 (docs/reference/activation_precision.md): QKV and FC1 inputs
  // 1h each, FC2 input 4h, and the projection keeps a 1h copy beside the attention's bf16 output:
  // 4 + 1 + 6 + (2 + 1) + 1 + 8 + 4 = 27h.
  const double sh = 2048.0 * 4096;
  CHECK(gpt_layer_bytes("bf16", true) == Approx(32 * sh));
  CHECK(gpt_layer_bytes("fp8", true) == Approx(27 * sh));
}

TEST_CASE("MXFP8 and NVFP4 saved GEMM inputs carry their block scales", "[models][activations]") {
  // Per token 20h + 7q·h (the four quantized inputs: QKV h, projection h, FC1 h, FC2 4h), with
  // q = 1 + 1/32 for MXFP8 (an E8M0 scale per 32 elements) and 0.5 + 1/16 for NVFP4 (an E4M3
  // scale per 16).
  const double sh = 2048.0 * 4096;
  CHECK(saved_gemm_input_bytes(Quantization::kMxfp8) == 1.03125);
  CHECK(saved_gemm_input_bytes(Quantization::kNvfp4) == 0.5625);
  CHECK(gpt_layer_bytes("mxfp8", true) == Approx((20 + 7 * 1.03125) * sh));
  CHECK(gpt_layer_bytes("nvfp4", true) == Approx((20 + 7 * 0.5625) * sh));
}

TEST_CASE("without a fused attention kernel the projection keeps only its FP8 copy",
          "[models][activations]") {
  // Unfused attention does not keep its output, so the projection's input is 1h, not 2h + 1h;
  // the s² softmax output (2·a·s bytes per token, no dropout) is the same in both precisions.
  const double sh = 2048.0 * 4096;
  const double scores = 2048.0 * 2 * 32 * 2048;
  CHECK(gpt_layer_bytes("bf16", false) == Approx(32 * sh + scores));
  CHECK(gpt_layer_bytes("fp8", false) == Approx(25 * sh + scores));
}

TEST_CASE("FP8 MoE layers quantize the experts' inputs and keep the router's bf16 input",
          "[models][activations][moe]") {
  // Mixtral, uniform routing, t = 1, flash attention, T tokens. Attention per token: norm input
  // 2h, QKV input 1h, Q 2·4096, K and V 4·1024, projection (2 + 1)·4096 = 36,864 (as in bf16).
  // MoE: norm input 2h and router input 2h stay bf16, router 6E: 16,432; probabilities 2·4 = 8;
  // each of k = 2 expert rows FC1 input 1h, SwiGLU input 4·14336, FC2 input 14336:
  // 2·75,776 = 151,552. Total 204,856 bytes per token (241,720 in bf16).
  TrainingSpec run = training(4096, 1, 8);
  run.precision = wallsim::Dtype::kFp8;
  run.quantization = Quantization::kFp8PerTensor;
  const ActivationSetting x = activation_setting(run, 1, 1, false);
  CHECK(layer_activation_bytes(mixtral_8x7b(), x, 0) == 4096.0 * 204856);
}

TEST_CASE("each offload module moves the tensors it saves", "[models][activations][moe]") {
  // Mixtral 8x7B, t = 1, 4096 tokens, uniform routing (h = 4096, 32 heads of 128, 8 KV heads,
  // f_e = 14336, k = 2): per token attn_norm 2h, qkv_linear 2h (the bf16 norm output), core_attn
  // Q 2·4096 + K and V 2·1024 each (12,288), attn_proj 2·4096, mlp_norm 2h; the experts' k = 2
  // rows each expert_fc1 2h and moe_act the SwiGLU input 2·2·14336.
  const double T = 4096;
  const ActivationSetting s = flash_setting(4096, 1, false);
  const ModelSpec m = mixtral_8x7b();
  const auto bytes = [&](std::vector<std::string> modules) {
    return layer_offload_bytes(m, s, 0, modules);
  };
  CHECK(bytes({"attn_norm"}) == T * 8192);
  CHECK(bytes({"qkv_linear"}) == T * 8192);
  CHECK(bytes({"core_attn"}) == T * 12288);
  CHECK(bytes({"core_attn", "attn_proj"}) == T * (12288 + 8192));
  CHECK(bytes({"mlp_norm"}) == T * 8192);
  CHECK(bytes({"expert_fc1"}) == T * 2 * 8192);
  CHECK(bytes({"moe_act"}) == T * 2 * 57344);
  // Every module together is the layer less what no module saves: the router's input (the
  // norm output, 2h), its logits and scores 6E, the rows' probabilities 2·4 and the FC2 inputs
  // 2·2·14336.
  const double all = bytes(offload_module_names());
  CHECK(all == Approx(layer_activation_bytes(m, s, 0) - T * (8192 + 6 * 8 + 8 + 2 * 28672)));
  // Under layernorm recompute the norm output is not kept, so qkv_linear has nothing to move.
  ActivationSetting norms = s;
  norms.recompute_norms = true;
  CHECK(layer_offload_bytes(m, norms, 0, {"qkv_linear"}) == 0);
}
