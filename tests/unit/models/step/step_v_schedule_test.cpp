// V-shape schedules in the step builder (ZB-V, DualPipeV): stage s holds chunk 0 at virtual stage
// s and chunk 1 at 2p − 1 − s, so the last stage turns chunk 0 into chunk 1 without a transfer and
// stage 0 holds both the embedding and the loss.
#include <string>

#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// pp 4, vpp 2, one layer per virtual stage, tp 1, 8 micro-batches.
json v_config(const std::string& schedule) {
  return two_chunk_config(schedule);
}

}  // namespace

TEST_CASE("a V sends activations down chunk 0 and back up chunk 1, turning on the last stage",
          "[models][step][v_shape]") {
  for (const std::string schedule : {"zbv", "dualpipev"}) {
    INFO(schedule);
    const StepProgram program = build(v_config(schedule));
    REQUIRE(program.graphs.size() == 4);
    // Stage 0: chunk 0 sends to stage 1, chunk 1 (the loss) sends nothing; it receives chunk 1's
    // input from stage 1. 8 micro-batches each.
    CHECK(peers(program.graphs[0], OpKind::kSend, "send activation") ==
          std::vector<RankIndex>(8, 1));
    CHECK(peers(program.graphs[0], OpKind::kRecv, "recv activation") ==
          std::vector<RankIndex>(8, 1));
    // Stage 3 (virtual stages 3 and 4): receives chunk 0's input from stage 2, hands it to its
    // own chunk 1 locally, and sends chunk 1's output back to stage 2.
    CHECK(peers(program.graphs[3], OpKind::kSend, "send activation") ==
          std::vector<RankIndex>(8, 2));
    CHECK(peers(program.graphs[3], OpKind::kRecv, "recv activation") ==
          std::vector<RankIndex>(8, 2));
    // A middle stage sends both ways: 8 to stage 2 (chunk 0), 8 to stage 0 (chunk 1).
    CHECK(peers(program.graphs[1], OpKind::kSend, "send activation").size() == 16);
    CHECK(peers(program.graphs[1], OpKind::kSend, "send gradient").size() == 16);
    // The gradients retrace the V: stage 0 sends chunk 0's to nobody and chunk 1's to stage 1.
    CHECK(peers(program.graphs[0], OpKind::kSend, "send gradient") == std::vector<RankIndex>(8, 1));
    // The embedding and the loss on stage 0, neither on the last stage.
    CHECK(count_labelled(program.graphs[0], "cross-entropy") > 0);
    CHECK(count_labelled(program.graphs[0], "embedding") > 0);
    CHECK(count_labelled(program.graphs[3], "cross-entropy") == 0);
    CHECK(count_labelled(program.graphs[3], "embedding") == 0);
  }
}

TEST_CASE("tied embeddings in a V share one table on stage 0: no copy, no embedding all-reduce",
          "[models][step][v_shape]") {
  json v = v_config("zbv");
  v["model"]["tied_embeddings"] = true;
  v["num_gpus"] = 8;  // dp 2: the embedding all-reduce would run beside the DP reduction
  v["training"]["global_batch"] = 16;
  const RunConfig config = config_from(v);
  const StepProgram program = build_step(config, h100(), Fidelity::kSymmetric);
  for (const OpGraph& graph : program.graphs) {
    CHECK(select(graph, [&](const Op& op) {
            return label_has(graph, op, "embedding grad ar");
          }).empty());
  }
  // With 1F1B the output layer sits on stage 3 and keeps its own copy of the table, V·h more
  // weights than a middle stage; in a V stage 0 holds the one table, as with pp = 1.
  const MemoryReport report =
      memory_report(config.model, config.layout, config.training, h100().profile().hbm_bytes);
  const double table_bytes = 2.0 * 32000 * 1024;  // bf16 vocab × hidden
  CHECK(report.stages[0].weights - report.stages[1].weights == Approx(table_bytes).epsilon(0.01));
  CHECK(report.stages[3].weights == Approx(report.stages[1].weights));
}

TEST_CASE("V-shape schedules refuse full recompute and DualPipeV takes at least 2p micro-batches",
          "[models][step][v_shape]") {
  json full = v_config("dualpipev");
  full["training"]["recompute"] = "full";
  CHECK_THROWS_WITH(config_from(full), Catch::Contains("recompute"));
  json few = v_config("dualpipev");
  few["training"]["global_batch"] = 6;
  CHECK_THROWS_WITH(config_from(few),
                    Catch::Contains("training.schedule") && Catch::Contains("at least 2·pp = 8"));
  json one_chunk = v_config("zbv");
  one_chunk["parallel"]["vpp"] = 1;
  CHECK_THROWS_WITH(config_from(one_chunk), Catch::Contains("parallel.vpp = 1"));
}
