// The compute stream of each stage follows Megatron's pipeline schedules.
#include <string>

#include <catch2/catch.hpp>

#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

struct LayerPass {
  bool forward;
  std::int32_t microbatch;
  std::int32_t layer;
  bool operator==(const LayerPass&) const = default;
};

// The passes one stage runs, read off its compute stream: a layer's forward starts with its
// ln1, its backward with its residual2 gradient.
std::vector<LayerPass> passes(const OpGraph& g) {
  std::vector<LayerPass> result;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCompute || !op.layer) continue;
    const std::string& label = g.label(op.label);
    const bool forward = label.ends_with("ln1 fwd");
    if (forward || label.ends_with("residual2 bwd")) {
      result.push_back({forward, *op.microbatch, *op.layer});
    }
  }
  return result;
}

// 1F1B (Narayanan et al. 2021; Megatron schedules.py): w = min(p − s − 1, m) warm-up
// forwards, then one forward / one backward, then the remaining backwards.
std::vector<LayerPass> one_f_one_b(int p, int m, int s, int layer) {
  const int warmup = std::min(p - s - 1, m);
  std::vector<LayerPass> order;
  for (int i = 0; i < warmup; ++i) order.push_back({true, i, layer});
  for (int i = 0; i < m - warmup; ++i) {
    order.push_back({true, warmup + i, layer});
    order.push_back({false, i, layer});
  }
  for (int i = m - warmup; i < m; ++i) order.push_back({false, i, layer});
  return order;
}

json pipeline_config(int pp, int vpp, int microbatches) {
  json doc = base_config();
  doc["model"]["layers"] = pp * vpp;  // one layer per virtual stage
  doc["parallel"] = {{"tp", 1}, {"pp", pp}, {"vpp", vpp}};
  doc["num_gpus"] = pp;
  doc["training"]["global_batch"] = microbatches;
  return doc;
}

}  // namespace

TEST_CASE("1F1B with pp 4 and 8 micro-batches runs p − s − 1 warm-up forwards per stage",
          "[models][step]") {
  const StepProgram program = build(pipeline_config(4, 1, 8));
  REQUIRE(program.graphs.size() == 4);
  for (int s = 0; s < 4; ++s) {
    INFO("stage " << s);
    CHECK(passes(program.graphs[static_cast<std::size_t>(s)]) == one_f_one_b(4, 8, s, s));
  }
}

TEST_CASE("interleaved 1F1B (pp 4, vpp 2, m 8) warms up with 2(p − s − 1) + (v − 1)p forwards",
          "[models][step]") {
  const int p = 4, v = 2, m = 8;
  const StepProgram program = build(pipeline_config(p, v, m));
  for (int s = 0; s < p; ++s) {
    INFO("stage " << s);
    const auto order = passes(program.graphs[static_cast<std::size_t>(s)]);
    REQUIRE(order.size() == static_cast<std::size_t>(2 * v * m));
    // The warm-up forwards, then the first steady-state forward, then the first backward.
    int before_first_backward = 0;
    while (order[static_cast<std::size_t>(before_first_backward)].forward) ++before_first_backward;
    CHECK(before_first_backward == 2 * (p - s - 1) + (v - 1) * p + 1);
    // Forwards go in groups of p micro-batches, chunk-major: micro-batches 0..3 through
    // chunk 0 (layer s), then 0..3 through chunk 1 (layer p + s), then 4..7 likewise.
    std::vector<LayerPass> forwards, backwards;
    for (const auto& pass : order) (pass.forward ? forwards : backwards).push_back(pass);
    std::vector<LayerPass> expected_forwards;
    for (int group = 0; group < m; group += p) {
      for (int chunk = 0; chunk < v; ++chunk) {
        for (int mb = group; mb < group + p; ++mb)
          expected_forwards.push_back({true, mb, chunk * p + s});
      }
    }
    CHECK(forwards == expected_forwards);
    // Backwards run the same table with the chunks reversed.
    CHECK(backwards.front() == LayerPass{false, 0, (v - 1) * p + s});
  }
}

TEST_CASE("each forward after the first virtual stage waits for its pipeline receive",
          "[models][step]") {
  const StepProgram program = build(pipeline_config(2, 1, 2));
  const OpGraph& g = program.graphs[1];
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCompute || !label_has(g, op, "ln1 fwd")) continue;
    const auto deps = g.dependencies(i);
    REQUIRE(deps.size() == 1);
    CHECK(g.op(deps[0]).kind == OpKind::kRecv);
    CHECK(g.op(deps[0]).microbatch == op.microbatch);
  }
}
