// Hybrid sharding (parallel.fsdp_shard_group): state sharded over shard groups of consecutive
// DP×CP ranks, replicated across them; gradients reduce-scattered in the shard group, then the
// shard all-reduced over the replica group; parameters gathered in the shard group.
#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "sim/core/input_error.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// h 2048, f 8192 (GeLU), tied embeddings, V 32000, 2 layers, tp 1, pp 1 on 8 GPUs: dp 8 and
// 166,209,536 parameters on every rank in three gradient buckets (step_data_parallel_test.cpp).
json hybrid_config(std::int64_t shard_group, const char* sharding = "optimizer") {
  json doc = base_config();
  doc["model"] = {{"layers", 2},        {"hidden", 2048},         {"heads", 16},
                  {"ffn_hidden", 8192}, {"vocab", 32000},         {"activation", "gelu"},
                  {"norm", "rmsnorm"},  {"tied_embeddings", true}};
  doc["parallel"] = {{"tp", 1}, {"data_sharding", sharding}};
  if (shard_group > 0) doc["parallel"]["fsdp_shard_group"] = shard_group;
  doc["num_gpus"] = 8;
  doc["training"]["global_batch"] = 16;
  doc["training"]["distributed_optimizer"] = true;
  doc["training"]["overlap"] = {{"dp_grad_reduce", true}, {"dp_param_gather", false}};
  return doc;
}

std::vector<OpIndex> collectives(const OpGraph& g, const char* text) {
  return select(
      g, [&](const Op& op) { return op.kind == OpKind::kCollective && label_has(g, op, text); });
}

const std::vector<int>& members(const StepProgram& program, const Op& op) {
  return program.group_ranks.at(op.group);
}

}  // namespace

TEST_CASE("hybrid sharding reduces in the shard group, then across the replicas",
          "[models][step][sharding]") {
  // Shard groups of 4 of the 8 DP ranks: {0,1,2,3} and {4,5,6,7}; replicas {0,4}, {1,5}, ...
  const StepProgram program = build(hybrid_config(4), Fidelity::kFull);
  const OpGraph& g = program.graphs[0];
  const auto scatters = collectives(g, "grad rs");
  const auto replicas = collectives(g, "grad replica ar");
  REQUIRE(scatters.size() == 3);
  REQUIRE(replicas.size() == scatters.size());
  for (std::size_t b = 0; b < scatters.size(); ++b) {
    const Op& rs = g.op(scatters[b]);
    const Op& ar = g.op(replicas[b]);
    CHECK(members(program, rs) == std::vector<int>{0, 1, 2, 3});
    CHECK(members(program, ar) == std::vector<int>{0, 4});
    CHECK(payload_of(program, ar).op == CollectiveOp::kAllReduce);
    // The shard: a quarter of the bucket's fp32 gradients, reduced after its reduce-scatter.
    CHECK(payload_of(program, ar).bytes == Approx(payload_of(program, rs).bytes / 4));
    bool after = false;
    for (OpIndex dep : g.dependencies(replicas[b])) after |= dep == scatters[b];
    CHECK(after);
  }
  // The updated parameters are gathered within the shard group.
  const auto gathers = collectives(g, "param ag");
  REQUIRE(!gathers.empty());
  for (OpIndex i : gathers) CHECK(members(program, g.op(i)) == std::vector<int>{0, 1, 2, 3});
  // Without a shard group every collective spans the 8 DP ranks and none reduces replicas.
  const StepProgram plain = build(hybrid_config(0), Fidelity::kFull);
  const auto plain_rs = collectives(plain.graphs[0], "grad rs");
  REQUIRE(!plain_rs.empty());
  CHECK(members(plain, plain.graphs[0].op(plain_rs[0])).size() == 8);
  CHECK(collectives(plain.graphs[0], "grad replica ar").empty());
}

TEST_CASE("hybrid FSDP gathers units in the shard group and reduces every micro-batch's shard",
          "[models][step][sharding]") {
  const StepProgram program = build(hybrid_config(2, "params"), Fidelity::kFull);
  const OpGraph& g = program.graphs[0];
  const auto scatters = collectives(g, "grad rs");
  const auto replicas = collectives(g, "grad replica ar");
  REQUIRE(!scatters.empty());
  CHECK(replicas.size() == scatters.size());
  CHECK(members(program, g.op(scatters[0])) == std::vector<int>{0, 1});
  CHECK(members(program, g.op(replicas[0])) == std::vector<int>{0, 2, 4, 6});
  for (OpIndex i : collectives(g, "param ag")) {
    CHECK(members(program, g.op(i)) == std::vector<int>{0, 1});
  }
}

TEST_CASE("hybrid sharding keeps state sharded over the shard group only",
          "[models][memory][sharding]") {
  const auto stage = [](const json& doc) {
    const RunConfig c = config_from(doc);
    return memory_report(c.model, c.layout, c.training, 80e9).stages[0];
  };
  const StageMemory all = stage(hybrid_config(0, "params"));
  const StageMemory two = stage(hybrid_config(2, "params"));
  // 1/8 of the state per rank becomes 1/2: four times as much.
  CHECK(two.optimizer == Approx(4 * all.optimizer));
  CHECK(two.grads == Approx(4 * all.grads));
  CHECK(two.weights == Approx(4 * all.weights));
  // The shard group equal to dp·cp is plain sharding.
  const StageMemory eight = stage(hybrid_config(8, "params"));
  CHECK(eight.optimizer == all.optimizer);
  CHECK(eight.peak == all.peak);
}

TEST_CASE("a shard group must divide dp·cp and shard something", "[models][sharding]") {
  CHECK_THROWS_WITH(config_from(hybrid_config(3)), Catch::Contains("must divide dp·cp = 8"));
  json doc = hybrid_config(4, "none");
  doc["training"]["distributed_optimizer"] = false;
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("shards nothing"));
  doc = hybrid_config(1);
  CHECK_THROWS_AS(config_from(doc), InputError);
}
