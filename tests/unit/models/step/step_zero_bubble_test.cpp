// Zero-bubble schedules in the step builder: B passes leave their weight-gradient GEMMs and the
// frees of their saved tensors to the W pass (models/step/pipeline_ops.hpp).
#include <string>

#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// pp 4, one layer per stage, tp 1, 8 micro-batches.
json zero_bubble_config(const std::string& schedule) {
  json doc = base_config();
  doc["model"]["layers"] = 4;
  doc["parallel"] = {{"tp", 1}, {"pp", 4}};
  doc["num_gpus"] = 4;
  doc["training"]["global_batch"] = 8;
  doc["training"]["schedule"] = schedule;
  return doc;
}

// Per micro-batch on one stage's compute stream: 'F' at a layer's ln1 forward, 'B' at its
// residual2 gradient, 'W' at its first weight-gradient GEMM (fc2's, the first the backward
// computes).
std::string passes(const OpGraph& g) {
  std::string result;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCompute || !op.layer) continue;
    const std::string& label = g.label(op.label);
    if (label.ends_with("ln1 fwd")) result += 'F';
    if (label.ends_with("residual2 bwd")) result += 'B';
    if (label.ends_with("fc2 wgrad")) result += 'W';
  }
  return result;
}

}  // namespace

TEST_CASE("ZB-H1 on stage s defers each W by s backward passes", "[models][step][zero_bubble]") {
  const StepProgram program = build(zero_bubble_config("zb_h1"));
  // zero_bubble.cpp: warm-up p − 1 − s forwards, then F (while any remain), B_k, W_{k − s}.
  CHECK(passes(program.graphs[0]) == "FFFFBWFBWFBWFBWFBWBWBWBW");
  CHECK(passes(program.graphs[1]) == "FFFBFBWFBWFBWFBWFBWBWBWW");
  CHECK(passes(program.graphs[3]) == "FBFBFBFBWFBWFBWFBWFBWWWW");
  // 1F1B runs each weight gradient inside its backward.
  CHECK(passes(build(zero_bubble_config("1f1b")).graphs[3]) == "FBWFBWFBWFBWFBWFBWFBWFBW");
}

TEST_CASE("a deferred weight gradient runs after its B and feeds the gradient reduction",
          "[models][step][zero_bubble]") {
  json doc = zero_bubble_config("zb_h1");
  doc["num_gpus"] = 8;  // dp 2
  doc["training"]["global_batch"] = 16;
  doc["training"]["distributed_optimizer"] = true;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[3];
  // The last micro-batch's fc1 weight gradient is the last GEMM of the stage's layer, and the
  // gradient reduce-scatter of its bucket waits for it.
  const auto wgrads = select(g, [&](const Op& op) { return label_has(g, op, "fc1 wgrad"); });
  REQUIRE(wgrads.size() == 8);
  const OpIndex last_w = wgrads.back();
  const auto scatters = select(g, [&](const Op& op) { return label_has(g, op, "grad rs"); });
  REQUIRE(!scatters.empty());
  bool waits = false;
  for (OpIndex rs : scatters) {
    for (OpIndex dep : g.dependencies(rs)) waits = waits || dep >= last_w;
  }
  CHECK(waits);
  // Every weight gradient is emitted after the backward that produced its inputs.
  const auto backwards = select(g, [&](const Op& op) { return label_has(g, op, "fc1 dgrad"); });
  REQUIRE(backwards.size() == 8);
  for (std::size_t k = 0; k < 8; ++k) CHECK(wgrads[k] > backwards[k]);
}

TEST_CASE("zero-bubble schedules refuse what the builder cannot split",
          "[models][step][zero_bubble]") {
  json full = zero_bubble_config("zb_h2");
  full["training"]["recompute"] = "full";
  CHECK_THROWS_WITH(config_from(full), Catch::Contains("recompute"));
  json interleaved = zero_bubble_config("zb_h1");
  interleaved["parallel"]["vpp"] = 2;
  interleaved["model"]["layers"] = 8;
  CHECK_THROWS_WITH(config_from(interleaved), Catch::Contains("one model chunk per stage"));
}

namespace {

// The zero-bubble test layout with 8 routed experts, top-2, over EP 2 (dp 2, 8 GPUs).
json moe_config(const std::string& schedule) {
  json doc = zero_bubble_config(schedule);
  doc["model"]["moe"] = {{"experts", 8}, {"topk", 2}, {"ffn_hidden", 512}};
  doc["num_gpus"] = 8;
  doc["parallel"]["ep"] = 2;
  doc["training"]["global_batch"] = 16;
  return doc;
}

std::vector<OpIndex> labelled(const OpGraph& g, const std::string& text) {
  return select(g, [&](const Op& op) { return label_has(g, op, text); });
}

}  // namespace

TEST_CASE("an MoE layer's W pass holds the routed experts' and the router's weight gradients",
          "[models][step][zero_bubble][moe]") {
  const StepProgram program = build(moe_config("zb_h1"));
  const OpGraph& g = program.graphs[0];
  // Stage 0 of 4 has one MoE layer and runs 16 / 2 = 8 micro-batches.
  const auto fc1_w = labelled(g, "experts fc1 wgrad");
  const auto fc2_w = labelled(g, "experts fc2 wgrad");
  const auto router_w = labelled(g, "router wgrad");
  const auto fc1_d = labelled(g, "experts fc1 dgrad");
  REQUIRE(fc1_w.size() == 8);
  REQUIRE(fc2_w.size() == 8);
  REQUIRE(router_w.size() == 8);
  REQUIRE(fc1_d.size() == 8);
  // ZB-H1 on stage 0 defers nothing past its own B (s = 0), so each W follows its B; on the
  // last stage (s = 3) the first micro-batch's weight gradients wait for three later
  // backwards, which 1F1B never does.
  for (std::size_t k = 0; k < 8; ++k) CHECK(fc1_w[k] > fc1_d[k]);
  const OpGraph& last = program.graphs[3];
  const auto last_w = labelled(last, "experts fc1 wgrad");
  const auto last_d = labelled(last, "experts fc1 dgrad");
  REQUIRE(last_w.size() == 8);
  REQUIRE(last_d.size() == 8);
  CHECK(last_w[0] > last_d[3]);
  const StepProgram one_f_one_b = build(moe_config("1f1b"));
  const OpGraph& plain = one_f_one_b.graphs[3];
  const auto plain_w = labelled(plain, "experts fc1 wgrad");
  const auto plain_d = labelled(plain, "experts fc1 dgrad");
  REQUIRE(plain_w.size() == 8);
  REQUIRE(plain_d.size() == 8);
  CHECK(plain_w[0] < plain_d[1]);
  // No op waits for a deferred gradient except through the gradient reduction: the layer's
  // input gradient follows the router's data gradient, not its weight gradient.
  for (OpIndex w : router_w) {
    for (OpIndex i = 0; i < g.size(); ++i) {
      if (!label_has(g, g.op(i), "moe grad sum")) continue;
      for (OpIndex dep : g.dependencies(i)) CHECK(dep != w);
    }
  }
}

TEST_CASE("MLA's projections and the MTP projection leave their weight gradients to the W pass",
          "[models][step][zero_bubble]") {
  // The zero-bubble layout with DeepSeek-V3's MLA ranks and one MTP layer on the last stage.
  json doc = zero_bubble_config("zb_h1");
  doc["model"]["mla"] = {{"q_lora_rank", 1536},
                         {"kv_lora_rank", 512},
                         {"qk_head_dim", 128},
                         {"qk_rope_head_dim", 64},
                         {"v_head_dim", 128}};
  doc["model"]["kv_heads"] = doc["model"]["heads"];  // latent attention has no query groups
  doc["model"]["mtp_layers"] = 1;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[3];  // the last stage: one layer and the MTP block
  // On stage 3 of 4 ZB-H1 defers each W by three backward passes: micro-batch 0's weight
  // gradients come after micro-batch 3's data gradients, for MLA's kv up-projection and for
  // the MTP projection alike.
  const auto kv_w = labelled(g, "kv up wgrad");
  const auto kv_d = labelled(g, "kv up dgrad");
  const auto mtp_w = labelled(g, "projection wgrad");
  const auto mtp_d = labelled(g, "projection dgrad");
  REQUIRE(kv_w.size() >= 8);
  REQUIRE(kv_d.size() >= 8);
  REQUIRE(mtp_w.size() == 8);
  REQUIRE(mtp_d.size() == 8);
  CHECK(kv_w[0] > kv_d[3]);
  CHECK(mtp_w[0] > mtp_d[3]);
}
