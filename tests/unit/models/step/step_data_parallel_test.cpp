// Data-parallel gradient buckets, parameter gathers and the optimizer step.
#include <algorithm>

#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// h 2048, f 8192 (GeLU), RMSNorm, tied embeddings, V 32000, 2 layers, tp 1, pp 1. Parameters
// in backward order (Megatron's bucket order): final norm 2048; per layer fc2 16,777,216,
// fc1 16,777,216, ln2 2048, proj 4,194,304, qkv 12,582,912, ln1 2048; the embedding
// 65,536,000. Stage total 166,209,536.
json bucket_config(int gpus) {
  json doc = base_config();
  doc["model"] = {{"layers", 2},        {"hidden", 2048},         {"heads", 16},
                  {"ffn_hidden", 8192}, {"vocab", 32000},         {"activation", "gelu"},
                  {"norm", "rmsnorm"},  {"tied_embeddings", true}};
  doc["parallel"] = {{"tp", 1}};
  doc["num_gpus"] = gpus;
  doc["training"]["global_batch"] = 2 * gpus;  // two micro-batches per rank
  doc["training"]["distributed_optimizer"] = true;
  doc["training"]["overlap"] = {{"dp_grad_reduce", true}, {"dp_param_gather", false}};
  return doc;
}

std::vector<OpIndex> dp_collectives(const OpGraph& g, const char* text) {
  return select(g, [&](const Op& op) {
    return op.kind == OpKind::kCollective && is(op, OpCategory::kDp) && label_has(g, op, text);
  });
}

}  // namespace

TEST_CASE("gradient buckets close at the first tensor that reaches 40M parameters",
          "[models][step]") {
  // dp 8: bucket size max(40M, 8M) = 40M. Bucket 0: final norm + layer 1 through qkv =
  // 2048 + 16,777,216·2 + 2048 + 4,194,304 + 12,582,912 = 50,335,744; bucket 1: layer 1's ln1
  // + layer 0 through qkv, the same count; bucket 2: layer 0's ln1 + the embedding.
  const StepProgram program = build(bucket_config(8));
  const OpGraph& g = program.graphs[0];
  const auto reduces = dp_collectives(g, "grad rs");
  REQUIRE(reduces.size() == 3);
  const std::vector<double> params{50'335'744, 50'335'744, 2048 + 65'536'000};
  for (std::size_t b = 0; b < 3; ++b) {
    const CommPayload& p = payload_of(program, g.op(reduces[b]));
    CHECK(p.op == CollectiveOp::kReduceScatter);
    CHECK(p.bytes == 4 * params[b]);  // fp32 main gradients
    // Issued in the last micro-batch's backward only.
    for (OpIndex dep : g.dependencies(reduces[b])) CHECK(g.op(dep).microbatch == 1);
  }
  // After the optimizer step the distributed optimizer gathers each bucket's bf16 parameters.
  const auto gathers = dp_collectives(g, "param ag");
  REQUIRE(gathers.size() == 3);
  CHECK(payload_of(program, g.op(gathers[0])).bytes == 2 * params[2]);  // forward order
  CHECK(payload_of(program, g.op(gathers[2])).bytes == 2 * params[0]);
}

TEST_CASE("buckets grow to 1M parameters per DP rank on large DP groups", "[models][step]") {
  // dp 64: bucket size 64M, so bucket 0 also takes layer 1's ln1 and layer 0's fc2:
  // 50,335,744 + 2048 + 16,777,216 = 67,115,008.
  const StepProgram program = build(bucket_config(64));
  const OpGraph& g = program.graphs[0];
  const auto reduces = dp_collectives(g, "grad rs");
  REQUIRE(reduces.size() == 2);
  CHECK(payload_of(program, g.op(reduces[0])).bytes == 4 * 67'115'008.0);
}

TEST_CASE("without overlap the whole gradient reduces once after the backward", "[models][step]") {
  json doc = bucket_config(8);
  doc["training"]["overlap"]["dp_grad_reduce"] = false;
  doc["training"]["distributed_optimizer"] = false;
  doc["training"]["grad_reduce_dtype"] = "bf16";
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const auto reduces = dp_collectives(g, "grad ar");
  REQUIRE(reduces.size() == 1);
  CHECK(payload_of(program, g.op(reduces[0])).op == CollectiveOp::kAllReduce);
  CHECK(payload_of(program, g.op(reduces[0])).bytes == 2 * 166'209'536.0);
  CHECK(dp_collectives(g, "param ag").empty());
}

TEST_CASE("the optimizer step streams 30 bytes per parameter of the local shard",
          "[models][step]") {
  const RunConfig config = config_from(bucket_config(8));
  const StepProgram program = build_step(config, h100(), Fidelity::kSymmetric);
  const OpGraph& g = program.graphs[0];
  const auto step = select(g, [](const Op& op) { return is(op, OpCategory::kOptimizer); });
  REQUIRE(step.size() == 1);
  // Distributed optimizer over dp 8: 166,209,536 / 8 parameters, each read and written as
  // fp32 master, grad, m, v (28 bytes) plus the bf16 parameter written (2).
  CHECK(g.op(step[0]).duration ==
        h100().memory_bound(30.0 * 166'209'536 / 8, h100().profile().sms));
  // It waits for every bucket's reduction.
  CHECK(g.dependencies(step[0]).size() == 3);
}

TEST_CASE("the precision-aware optimizer streams its state dtypes and reduces bf16 gradients",
          "[models][step]") {
  // --use-precision-aware-optimizer --main-grads-dtype bf16 --exp-avg-dtype bf16
  // --exp-avg-sq-dtype bf16: the step reads the bf16 gradient (2), reads and writes m and v
  // (2·(2 + 2)), reads and writes the 16-bit master remainder and the bf16 parameter (8): 18
  // bytes per parameter of the dp-8 shard. The reduce-scatter moves 2 bytes per parameter.
  json doc = bucket_config(8);
  doc["training"]["grad_reduce_dtype"] = "bf16";
  doc["training"]["optimizer"] = {
      {"precision_aware", true}, {"exp_avg_dtype", "bf16"}, {"exp_avg_sq_dtype", "bf16"}};
  const RunConfig config = config_from(doc);
  const StepProgram program = build_step(config, h100(), Fidelity::kSymmetric);
  const OpGraph& g = program.graphs[0];
  const auto step = select(g, [](const Op& op) { return is(op, OpCategory::kOptimizer); });
  REQUIRE(step.size() == 1);
  CHECK(g.op(step[0]).duration ==
        h100().memory_bound(18.0 * 166'209'536 / 8, h100().profile().sms));
  double reduced = 0;
  for (OpIndex op : dp_collectives(g, "grad rs")) reduced += payload_of(program, g.op(op)).bytes;
  CHECK(reduced == 2 * 166'209'536.0);
}

TEST_CASE("overlapped parameter gathers feed the first micro-batch's forward in order",
          "[models][step]") {
  json doc = bucket_config(8);
  doc["training"]["overlap"]["dp_param_gather"] = true;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const auto gathers = dp_collectives(g, "param ag");
  REQUIRE(gathers.size() == 3);
  // Forward order: bucket 2 (layer 0's ln1 + embedding), bucket 1 (layer 0's other tensors,
  // layer 1's ln1), bucket 0. The first gather has nothing to wait for and the embedding waits
  // for it: it is exposed. The embedding's pre-hook dispatches the second at once (it queues
  // behind the first); layer 0's pre-hook dispatches the third, after the embedding ran.
  CHECK(g.dependencies(gathers[0]).empty());
  CHECK(g.dependencies(gathers[1]).empty());
  const auto embedding = select(g, [&](const Op& op) {
    return op.kind == OpKind::kCompute && label_has(g, op, "embedding fwd") && op.microbatch == 0;
  });
  REQUIRE(embedding.size() == 1);
  CHECK(g.dependencies(embedding[0]) == std::vector<OpIndex>{gathers[0]});
  const auto third = g.dependencies(gathers[2]);
  REQUIRE(third.size() == 1);
  CHECK(label_has(g, g.op(third[0]), "embedding fwd"));
  const auto layer0 =
      select(g, [&](const Op& op) { return label_has(g, op, "L0 ln1 fwd") && op.microbatch == 0; });
  // Layer 0 waits for both buckets holding its tensors (and for the embedding's output).
  const auto layer0_deps = g.dependencies(layer0[0]);
  CHECK(std::count(layer0_deps.begin(), layer0_deps.end(), gathers[0]) == 1);
  CHECK(std::count(layer0_deps.begin(), layer0_deps.end(), gathers[1]) == 1);
  CHECK(std::count(layer0_deps.begin(), layer0_deps.end(), gathers[2]) == 0);
  // Micro-batch 1 waits for no gather.
  for (OpIndex i = 0; i < g.size(); ++i) {
    if (g.op(i).microbatch != 1) continue;
    for (OpIndex dep : g.dependencies(i)) CHECK_FALSE(is(g.op(dep), OpCategory::kDp));
  }
}

TEST_CASE("stages after the first reduce their gradients as one bucket", "[models][step]") {
  // Megatron disables bucketing on pipeline ranks > 0 (off the critical path).
  json doc = bucket_config(16);
  doc["parallel"] = {{"tp", 1}, {"pp", 2}};
  doc["model"]["layers"] = 4;
  const StepProgram program = build(doc);
  CHECK(dp_collectives(program.graphs[0], "grad rs").size() >= 2);
  CHECK(dp_collectives(program.graphs[1], "grad rs").size() == 1);
  // Tied embeddings on pp > 1: first and last stage all-reduce the embedding gradient.
  for (const OpGraph& g : program.graphs) CHECK(dp_collectives(g, "embedding grad ar").size() == 1);
}
