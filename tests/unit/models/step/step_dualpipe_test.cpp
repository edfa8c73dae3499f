// DualPipe in the step builder (models/schedules/dualpipe.cpp): two chains over the same layers,
// chain 0 entering at stage 0 and chain 1 at the last stage, each stage holding one chunk of each
// (chunk 0 its lower position), the two copies of every position's parameters reduced together.
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// pp 4, vpp 2, 8 layers (two per position of a chain), tp 1, dp 1, 8 micro-batches (4 a chain).
json dualpipe_config(const std::string& schedule = "dualpipe") {
  json doc = two_chunk_config(schedule);
  doc["training"]["distributed_optimizer"] = true;
  return doc;
}

// The same model as plain 1F1B (vpp 1): two layers a stage.
json one_f_one_b_config() {
  json doc = dualpipe_config("1f1b");
  doc["parallel"]["vpp"] = 1;
  return doc;
}

std::multiset<RankIndex> sorted(const std::vector<RankIndex>& ranks) {
  return {ranks.begin(), ranks.end()};
}

}  // namespace

TEST_CASE("DualPipe runs chain 0 down the stages and chain 1 up, each with half the batches",
          "[models][step][dualpipe]") {
  const StepProgram program = build(dualpipe_config());
  REQUIRE(program.graphs.size() == 4);
  // Stage 0: chain 0's 4 micro-batches go to stage 1; chain 1 ends here (its loss), so its 4
  // activations come from stage 1 and its gradients go back there.
  CHECK(peers(program.graphs[0], OpKind::kSend, "send activation") == std::vector<RankIndex>(4, 1));
  CHECK(peers(program.graphs[0], OpKind::kRecv, "recv activation") == std::vector<RankIndex>(4, 1));
  CHECK(peers(program.graphs[0], OpKind::kSend, "send gradient") == std::vector<RankIndex>(4, 1));
  // The last stage mirrors it.
  CHECK(peers(program.graphs[3], OpKind::kSend, "send activation") == std::vector<RankIndex>(4, 2));
  CHECK(peers(program.graphs[3], OpKind::kRecv, "recv activation") == std::vector<RankIndex>(4, 2));
  // A middle stage sends each chain's activations on: 4 to stage 2 (chain 0), 4 to stage 0.
  CHECK(sorted(peers(program.graphs[1], OpKind::kSend, "send activation")) ==
        std::multiset<RankIndex>{0, 0, 0, 0, 2, 2, 2, 2});
  CHECK(sorted(peers(program.graphs[1], OpKind::kSend, "send gradient")) ==
        std::multiset<RankIndex>{0, 0, 0, 0, 2, 2, 2, 2});
  // Both end stages embed one chain's micro-batches and compute the other's loss; middle
  // stages neither. Each stage runs 8 micro-batches through one chunk each: 8 × 2 layers.
  for (const int stage : {0, 3}) {
    CHECK(count_labelled(program.graphs[stage], "cross-entropy") > 0);
    CHECK(count_labelled(program.graphs[stage], "embedding") > 0);
  }
  for (const int stage : {1, 2}) {
    CHECK(count_labelled(program.graphs[stage], "cross-entropy") == 0);
    CHECK(count_labelled(program.graphs[stage], "embedding") == 0);
  }
  for (const OpGraph& graph : program.graphs) CHECK(count_labelled(graph, "qkv fwd") == 8 * 2);
}

TEST_CASE("DualPipe keeps position s's layers on stage s and on stage pp − 1 − s",
          "[models][step][dualpipe]") {
  const RunConfig config = config_from(dualpipe_config());
  const auto& stages = config.layout.placement.stages;
  for (std::size_t s = 0; s < 4; ++s) {
    INFO("stage " << s);
    const std::size_t mirror = 3 - s;
    // Chunk 0 holds the lower position min(s, 3 − s), chunk 1 the higher, two layers each.
    CHECK(stages[s].chunks[0].first_layer == 2 * static_cast<std::int64_t>(std::min(s, mirror)));
    CHECK(stages[s].chunks[1].first_layer == 2 * static_cast<std::int64_t>(std::max(s, mirror)));
    CHECK(stages[s].chunks[0].count == 2);
    CHECK(stages[s].chunks[1].count == 2);
  }
  CHECK(config.layout.embedding_chunk_on(0) == 0);
  CHECK(config.layout.embedding_chunk_on(3) == 0);
  CHECK(config.layout.output_chunk_on(0) == 1);
  CHECK(config.layout.output_chunk_on(3) == 1);
  CHECK_FALSE(config.layout.holds_output(1));
  CHECK(config.layout.parameter_copies() == 2);
}

// DeepSeek-V3 Table 2: DualPipe keeps 2× the parameters of 1F1B. Against 1F1B over the same
// pp = 4 (two layers a stage): a middle stage holds positions 1 and 2, twice 1F1B's two layers;
// an end stage holds what 1F1B's first and last stages hold together (embedding, layers 0–1,
// layers 6–7, final norm, output layer). The distributed optimizer shards each position's state
// over both copies' ranks (dp = 1 here: two), so the optimizer bytes stay 1F1B's.
TEST_CASE("DualPipe holds two copies of the parameters, the optimizer state sharded over both",
          "[models][step][dualpipe]") {
  const RunConfig dual = config_from(dualpipe_config());
  const RunConfig plain = config_from(one_f_one_b_config());
  const double hbm = h100().profile().hbm_bytes;
  const MemoryReport d = memory_report(dual.model, dual.layout, dual.training, hbm);
  const MemoryReport p = memory_report(plain.model, plain.layout, plain.training, hbm);
  CHECK(d.stages[1].weights == Approx(2 * p.stages[1].weights));
  CHECK(d.stages[1].grads == Approx(2 * p.stages[1].grads));
  CHECK(d.stages[0].weights == Approx(p.stages[0].weights + p.stages[3].weights));
  CHECK(d.stages[3].weights == Approx(d.stages[0].weights));
  CHECK(d.stages[1].optimizer == Approx(p.stages[1].optimizer));
  CHECK(optimizer_shards(dual.layout, dual.training) == 2);
  // pp + 1 = 5 chunks in flight (Table 2) on every stage, against 1F1B's pp − s micro-batches.
  for (const StageMemory& stage : d.stages) CHECK(stage.microbatches_in_flight == 5);
}

TEST_CASE("DualPipe reduces each position's gradients over both copies' ranks",
          "[models][step][dualpipe]") {
  json doc = dualpipe_config();
  doc["num_gpus"] = 8;  // dp 2
  doc["training"]["global_batch"] = 16;
  const StepProgram program = build(doc, Fidelity::kFull);
  REQUIRE(program.graphs.size() == 8);
  for (std::size_t r = 0; r < program.graphs.size(); ++r) {
    const OpGraph& graph = program.graphs[r];
    const auto reductions = select(graph, [&](const Op& op) {
      return is(op, OpCategory::kDp) && label_has(graph, op, "grad rs");
    });
    REQUIRE_FALSE(reductions.empty());
    for (const OpIndex i : reductions) {
      // dp 2 on stage s and dp 2 on stage 3 − s: four ranks, two of each stage.
      const std::vector<int>& members = program.group_ranks[graph.op(i).group];
      std::set<std::int64_t> stages;
      for (const int rank : members) stages.insert(program.stage[static_cast<std::size_t>(rank)]);
      CHECK(members.size() == 4);
      const std::int64_t s = program.stage[r];
      CHECK(stages == std::set<std::int64_t>{std::min(s, 3 - s), std::max(s, 3 - s)});
    }
  }
}

TEST_CASE("DualPipe refuses what its two copies leave unmodelled", "[models][step][dualpipe]") {
  json tied = dualpipe_config();
  tied["model"]["tied_embeddings"] = true;
  CHECK_THROWS_WITH(config_from(tied),
                    Catch::Contains("training.schedule") && Catch::Contains("tied embeddings"));
  json odd = dualpipe_config();
  odd["parallel"]["pp"] = 3;
  odd["num_gpus"] = 3;
  odd["model"]["layers"] = 6;
  CHECK_THROWS_WITH(config_from(odd), Catch::Contains("even pp"));
  json few = dualpipe_config();
  few["training"]["global_batch"] = 6;
  CHECK_THROWS_WITH(config_from(few), Catch::Contains("at least 2·pp = 8"));
  json full = dualpipe_config();
  full["training"]["recompute"] = "full";
  CHECK_THROWS_WITH(config_from(full), Catch::Contains("recompute"));
}
