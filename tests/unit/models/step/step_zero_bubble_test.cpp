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
  json moe = zero_bubble_config("zb_h1");
  moe["model"]["moe"] = {{"experts", 8}, {"topk", 2}, {"ffn_hidden", 512}};
  CHECK_THROWS_WITH(config_from(moe),
                    Catch::Contains("training.schedule") && Catch::Contains("MoE"));
  json full = zero_bubble_config("zb_h2");
  full["training"]["recompute"] = "full";
  CHECK_THROWS_WITH(config_from(full), Catch::Contains("recompute"));
  json interleaved = zero_bubble_config("zb_h1");
  interleaved["parallel"]["vpp"] = 2;
  interleaved["model"]["layers"] = 8;
  CHECK_THROWS_WITH(config_from(interleaved), Catch::Contains("one model chunk per stage"));
}
