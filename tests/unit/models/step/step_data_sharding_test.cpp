// Data sharding in the step builder (parallel.data_sharding, models/step/data_parallel_ops.hpp):
// what each ZeRO stage communicates per step, when ZeRO-3 gathers, and the memory it holds.
#include <string>

#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "sim/core/engine.hpp"
#include "sim/core/input_error.hpp"
#include "sim/graph/replay.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// base_config (tp 2, dp 4) with `microbatches` micro-batches per DP rank.
json sharded_config(const std::string& sharding, std::int64_t microbatches) {
  json doc = base_config();
  doc["parallel"]["data_sharding"] = sharding;
  doc["training"]["global_batch"] = 4 * microbatches;
  doc["training"]["overlap"] = {{"dp_grad_reduce", true}, {"dp_param_gather", true}};
  return doc;
}

// Parameters the data-parallel collectives move, as elements: bytes ÷ 2 for the bf16 parameter
// gathers, ÷ 4 for the fp32 gradient reductions.
double dp_elements(const StepProgram& program) {
  const OpGraph& g = program.graphs[0];
  double elements = 0;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCollective || !is(op, OpCategory::kDp)) continue;
    const CommPayload& p = payload_of(program, op);
    elements += p.bytes / (p.op == CollectiveOp::kAllGather ? 2.0 : 4.0);
  }
  return elements;
}

// The per-GPU parameters of the only stage, and its embedding's (V·h/tp = 32000·1024/2).
double stage_params(const StepProgram& program) {
  return program.memory.stages[0].parameters;
}
constexpr double kEmbeddingParams = 32000.0 * 1024 / 2;

}  // namespace

TEST_CASE("at one micro-batch ZeRO-3 moves 3x the parameters against ZeRO-1's 2x",
          "[models][step][sharding]") {
  // The ZeRO paper (Rajbhandari et al. 2020, §7): the distributed optimizer reduce-scatters the
  // gradients and all-gathers the parameters once (2Ψ); ZeRO-3 gathers the parameters for the
  // forward and again for the backward, then reduce-scatters (3Ψ). The embedding's backward
  // needs no weights, so its backward gather is skipped: 3Ψ − E.
  const StepProgram zero1 = build(sharded_config("optimizer", 1));
  const StepProgram zero3 = build(sharded_config("params", 1));
  const double params = stage_params(zero1);
  CHECK(stage_params(zero3) == Approx(params));
  CHECK(dp_elements(zero1) == Approx(2 * params));
  CHECK(dp_elements(zero3) == Approx(3 * params - kEmbeddingParams));
}

TEST_CASE("sharded gradients are reduce-scattered every micro-batch", "[models][step][sharding]") {
  // m = 3 micro-batches. ZeRO-1 delays the reduction to the last one: 2Ψ. ZeRO-2 reduce-scatters
  // after every micro-batch's backward and gathers once after the step: 3Ψ + Ψ. ZeRO-3 gathers
  // twice and reduce-scatters once per micro-batch: 3·(3Ψ − E).
  const double params = stage_params(build(sharded_config("optimizer", 3)));
  CHECK(dp_elements(build(sharded_config("optimizer", 3))) == Approx(2 * params));
  CHECK(dp_elements(build(sharded_config("grads", 3))) == Approx(4 * params));
  CHECK(dp_elements(build(sharded_config("params", 3))) ==
        Approx(3 * (3 * params - kEmbeddingParams)));
}

TEST_CASE("a ZeRO-3 unit's gather is issued with the previous unit's and waited for by its own",
          "[models][step][sharding]") {
  const StepProgram program = build(sharded_config("params", 1));
  const OpGraph& g = program.graphs[0];
  const auto first_of = [&](const std::string& text) {
    const auto ops = select(g, [&](const Op& op) { return label_has(g, op, text); });
    REQUIRE(!ops.empty());
    return ops.front();
  };
  const auto gathers = select(g, [&](const Op& op) { return label_has(g, op, "param ag fwd"); });
  // Forward units: embedding, four layers, output (its final norm): six gathers.
  REQUIRE(gathers.size() == 6);
  // Layer 1's gather (the third) is emitted before layer 0 runs: it overlaps layer 0.
  CHECK(gathers[2] < first_of("L0 "));
  CHECK(gathers[3] > first_of("L0 "));
  // Layer 1's first kernel waits for it.
  const OpIndex layer1 = first_of("L1 ");
  bool waits = false;
  for (OpIndex dep : g.dependencies(layer1)) waits = waits || dep == gathers[2];
  CHECK(waits);
  // Gathers run on their own stream, beside the reduce-scatters.
  CHECK(g.op(gathers[0]).stream == Streams::kDpGather);
  CHECK(g.op(first_of("grad rs")).stream == Streams::kDp);
  // Backward gathers: the four layers and the output unit, not the embedding.
  CHECK(select(g, [&](const Op& op) { return label_has(g, op, "param ag bwd"); }).size() == 5);
}

TEST_CASE("each ZeRO stage shards its part of the static memory over dp·cp",
          "[models][step][sharding]") {
  // ZeRO paper §5.1 with 4-byte main gradients: 2Ψ + 4Ψ + 12Ψ/N, 2Ψ + 16Ψ/N, 18Ψ/N (N = 4).
  for (const auto& [sharding, weights, grads] :
       {std::tuple{"optimizer", 2.0, 4.0}, {"grads", 2.0, 1.0}, {"params", 0.5, 1.0}}) {
    const StepProgram program = build(sharded_config(sharding, 2));
    const StageMemory& m = program.memory.stages[0];
    INFO(sharding);
    CHECK(m.weights == Approx(weights * m.parameters));
    CHECK(m.grads == Approx(grads * m.parameters));
    CHECK(m.optimizer == Approx(3.0 * m.parameters));
  }
}

TEST_CASE("ZeRO-3's simulated peak holds gathered units within the analytical bound",
          "[models][step][sharding]") {
  for (const char* sharding : {"grads", "params"}) {
    INFO(sharding);
    const StepProgram program = build(sharded_config(sharding, 2));
    Engine engine;
    FixedDelayComm comm(engine, Time::from_us(1));
    Replay replay(engine, program.graphs, program.groups, comm, InvariantPolicy::kRecord);
    const ReplayResult result = replay.run();
    CHECK(result.invariants.ok());  // memory never fell below the static bytes, and came back
    const StageMemory& m = program.memory.stages[0];
    const double above_static = result.ranks[0].peak_bytes - program.graphs[0].static_bytes;
    // At least the activations, never more than activations plus the unit-buffer bound and
    // the backward's transient gradients.
    CHECK(above_static > m.activations);
    CHECK(above_static <= m.activations + m.unit_buffers + m.grad_transients);
    CHECK(m.unit_buffers > 0);
  }
}

TEST_CASE("data_sharding and distributed_optimizer must agree", "[models][step][sharding]") {
  json doc = sharded_config("grads", 1);
  doc["training"]["distributed_optimizer"] = false;
  CHECK_THROWS_WITH(config_from(doc),
                    Catch::Contains("parallel.data_sharding") &&
                        Catch::Contains("contradicts training.distributed_optimizer = false"));
  doc["parallel"]["data_sharding"] = "none";
  CHECK_FALSE(config_from(doc).training.distributed_optimizer);
  doc["parallel"]["data_sharding"] = "zero3";
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("none, optimizer, grads, params"));
  // Without the key the distributed optimizer decides.
  json plain = base_config();
  plain["training"]["distributed_optimizer"] = true;
  CHECK(config_from(plain).layout.data_sharding == DataSharding::kOptimizer);
}

TEST_CASE("sharded gradients refuse schedules with W passes", "[models][step][sharding]") {
  json doc = sharded_config("grads", 8);
  doc["model"]["layers"] = 4;
  doc["parallel"]["pp"] = 2;
  doc["training"]["schedule"] = "zb_h1";
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("defers weight gradients (zb_h1)"));
  doc["parallel"]["data_sharding"] = "optimizer";
  CHECK(config_from(doc).layout.data_sharding == DataSharding::kOptimizer);
}
