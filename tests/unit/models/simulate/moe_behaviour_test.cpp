// MoE in a simulated step: skewed routing slows the step through the busiest expert rank, and
// an EP group that leaves the NVLink domain shows up as the communication wall.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

// Two MoE layers (h 2048, 16 experts of width 1408, top-2) on 16 H100 (two nodes): tp 1, ep 8,
// so EDP = 2 and the EP group folds over eight DP ranks.
json moe_config() {
  return {{"model",
           {{"layers", 2},
            {"hidden", 2048},
            {"heads", 16},
            {"kv_heads", 4},
            {"ffn_hidden", 5632},
            {"vocab", 32000},
            {"activation", "swiglu"},
            {"norm", "rmsnorm"},
            {"tied_embeddings", false},
            {"moe", {{"experts", 16}, {"topk", 2}, {"ffn_hidden", 1408}}}}},
          {"cluster", "../clusters/dgx-h100.json"},
          {"num_gpus", 16},
          {"parallel", {{"tp", 1}, {"ep", 8}}},
          {"training",
           {{"seq_len", 4096},
            {"micro_batch", 1},
            {"global_batch", 32},
            {"distributed_optimizer", true}}},
          {"simulation", {{"fidelity", "symmetric"}, {"network", "flow"}}}};
}

SimulationResult simulate_doc(const json& document) {
  const std::string root = WALLSIM_SOURCE_ROOT;
  const RunConfig config = run_config_from_json(document, root + "/configs/examples/test.json");
  const Profile profile = load_profile(root + "/calibration/profiles/h100-sxm.json");
  return simulate(config, profile.gpu, profile.comm);
}

RunSummary run(const json& document) {
  return simulate_doc(document).summary;
}

double exposed_ep(const RunSummary& s) {
  return s.time.exposed_comm_s[category_slot(OpCategory::kEp)];
}

// On rank 0: the EP exchanges' total time, and whether any shared-expert kernel ran while one
// was in flight.
struct SharedBesideEp {
  double ep_s = 0;
  bool overlapped = false;
};

SharedBesideEp shared_beside_ep(const SimulationResult& result) {
  const OpGraph& graph = result.program.graphs[0];
  const auto& records = result.replay.ranks[0].ops;
  std::vector<OpIndex> ep, shared;
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.op(i);
    if (op.kind == OpKind::kCollective && op.category == category_code(OpCategory::kEp)) {
      ep.push_back(i);
    }
    if (op.stream == Streams::kCompute &&
        std::string(graph.label(op.label)).find(" shared ") != std::string::npos) {
      shared.push_back(i);
    }
  }
  REQUIRE(!ep.empty());
  REQUIRE(!shared.empty());
  SharedBesideEp out;
  for (OpIndex e : ep) {
    out.ep_s += (records[e].end - records[e].start).seconds();
    for (OpIndex k : shared) {
      if (records[k].start < records[e].end && records[e].start < records[k].end) {
        out.overlapped = true;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("more skewed routing raises the step time through the busiest expert rank",
          "[models][simulate][moe]") {
  // Loads ∝ (i+1)^-x over 16 experts, two per EP rank: rank 0 holds experts 0 and 1, whose
  // share grows with x (x = 0: 2/16; x = 1: (1 + 1/2)/H16 = 0.44). Its grouped GEMMs and the
  // all-to-all it receives grow in proportion, and every EP rank waits for it at the combine.
  double previous = 0;
  for (double skew : {0.0, 0.5, 1.0}) {
    CAPTURE(skew);
    json doc = moe_config();
    doc["model"]["moe"]["router_imbalance"] = {{"skew", skew}};
    const double step = run(doc).iteration_time_s;
    CHECK(step > previous * 1.05);
    previous = step;
  }
}

TEST_CASE("EP across nodes shows the communication wall, inside a node it hides",
          "[models][simulate][moe]") {
  // Default order: EP (stride 1) = ranks 0-7, one NVLink domain. Order tp-cp-dp-ep-pp puts
  // expert DP first (stride 1) and EP at stride 2: EP = 0, 2, ..., 14 over both nodes, so each
  // all-to-all moves 4 of its 7 peers' rows over one 400 Gb/s NIC instead of NVLink.
  const RunSummary inside = run(moe_config());
  json doc = moe_config();
  doc["parallel"]["order"] = "tp-cp-dp-ep-pp";
  const RunSummary across = run(doc);
  CHECK(exposed_ep(across) > 3.0 * exposed_ep(inside));
  CHECK(across.walls.communication.share > inside.walls.communication.share);
  CHECK(across.walls.communication.contributor == "ep");
}

TEST_CASE("the EP overlap hides part of the all-to-all behind another micro-batch",
          "[models][simulate][moe]") {
  // EP across the two nodes (order tp-cp-dp-ep-pp), pp 1, global batch 64 over dp 16: four
  // micro-batches per rank. With overlap.ep_comm each backward pairs with the next
  // forward, and their dispatches and combines run beside the other's attention and experts
  // (mechanics.md §4.2), so the exposed EP time falls and so does the step.
  json doc = moe_config();
  doc["parallel"]["order"] = "tp-cp-dp-ep-pp";
  doc["training"]["global_batch"] = 64;
  const RunSummary serial = run(doc);
  doc["training"]["overlap"] = {{"ep_comm", true}};
  const RunSummary overlapped = run(doc);
  CHECK(exposed_ep(overlapped) < 0.6 * exposed_ep(serial));
  CHECK(overlapped.iteration_time_s < serial.iteration_time_s);
}

TEST_CASE("the EP overlap with plain 1F1B over several stages is refused",
          "[models][simulate][moe]") {
  json doc = moe_config();
  doc["parallel"]["pp"] = 2;
  doc["training"]["overlap"] = {{"ep_comm", true}};
  const std::string root = WALLSIM_SOURCE_ROOT;
  CHECK_THROWS_WITH(run_config_from_json(doc, root + "/configs/examples/test.json"),
                    Catch::Matchers::Contains("training.overlap.ep_comm") &&
                        Catch::Matchers::Contains("vpp > 1"));
}

namespace {

// moe_config() with 4 layers over pp 2 (dp 8, EDP 1): 32 / 8 = 4 micro-batches per pipeline.
json pipelined(const std::string& schedule, std::int64_t vpp) {
  json doc = moe_config();
  doc["model"]["layers"] = 4;
  doc["parallel"]["pp"] = 2;
  doc["parallel"]["vpp"] = vpp;
  doc["training"]["schedule"] = schedule;
  return doc;
}

}  // namespace

TEST_CASE("zero-bubble schedules shorten an MoE pipeline's step against 1F1B",
          "[models][simulate][moe][zero_bubble]") {
  // ZB-H1's bubble is (p − 1)(T_F + T_B − T_W) against 1F1B's (p − 1)(T_F + T_B + T_W)
  // (Qi et al. 2024, §3): the same passes, with the routed experts' and the router's weight
  // gradients moved into the bubble, can only end sooner; ZB-H2 fills it further.
  const double one_f_one_b = run(pipelined("1f1b", 1)).iteration_time_s;
  const double h1 = run(pipelined("zb_h1", 1)).iteration_time_s;
  const double h2 = run(pipelined("zb_h2", 1)).iteration_time_s;
  CHECK(h1 < one_f_one_b);
  CHECK(h2 <= h1);
}

TEST_CASE("DualPipeV's and DualPipe's paired passes hide the MoE all-to-alls",
          "[models][simulate][moe][zero_bubble][dualpipe]") {
  // DeepSeek-V3 §3.2.1: the backward of one micro-batch and the forward of another run as a
  // pair so that each one's dispatch and combine hide under the other's compute. With
  // training.overlap.ep_comm the pairs overlap; without it they run one after the other.
  // DualPipe (two chains, pp 2, 2 micro-batches each) pairs passes as DualPipeV does; its two
  // parameter copies reduce over stage 0's and stage 1's DP ranks together, and every rank of a
  // stage runs the same program, so full fidelity replays what symmetric fidelity stands for.
  for (const std::string schedule : {"dualpipev", "dualpipe"}) {
    INFO(schedule);
    json plain = pipelined(schedule, 2);
    json overlapped = plain;
    overlapped["training"]["overlap"] = {{"ep_comm", true}};
    const RunSummary serial = run(plain);
    const RunSummary paired = run(overlapped);
    REQUIRE(exposed_ep(serial) > 0);
    CHECK(exposed_ep(paired) < exposed_ep(serial));
    CHECK(paired.iteration_time_s < serial.iteration_time_s);
    json full = overlapped;
    full["simulation"]["fidelity"] = "full";
    CHECK(run(full).iteration_time_s == Approx(paired.iteration_time_s).epsilon(0.01));
  }
}

TEST_CASE("shared experts run in line by default and beside the exchanges when overlapped",
          "[models][simulate][moe]") {
  // A shared expert of width 2816 on the EP-across-nodes layout. Megatron-Core's default
  // (moe_shared_expert_overlap off) computes it on the compute stream before the router, and a
  // dispatcher exchange has the stream to itself: no shared kernel runs during an all-to-all,
  // and every all-to-all second is exposed. With the overlap the shared fc1 runs beside the
  // dispatch and fc2 beside the combine (forward and backward), hiding part of them.
  json doc = moe_config();
  doc["model"]["moe"]["shared_ffn_hidden"] = 2816;
  doc["parallel"]["order"] = "tp-cp-dp-ep-pp";
  const SimulationResult in_line = simulate_doc(doc);
  const SharedBesideEp a = shared_beside_ep(in_line);
  CHECK_FALSE(a.overlapped);
  // Exposed EP time also holds the host's issue gap after each dropless token-count sync.
  CHECK(exposed_ep(in_line.summary) >= a.ep_s * (1 - 1e-12));
  doc["training"]["overlap"] = {{"shared_expert", true}};
  const SimulationResult beside = simulate_doc(doc);
  const SharedBesideEp b = shared_beside_ep(beside);
  CHECK(b.overlapped);
  CHECK(exposed_ep(beside.summary) < exposed_ep(in_line.summary));
  CHECK(beside.summary.iteration_time_s < in_line.summary.iteration_time_s);
}

TEST_CASE("the shared-expert overlap needs shared experts and an exchanging dispatcher",
          "[models][simulate][moe]") {
  // Megatron-Core refuses moe_shared_expert_overlap with the allgather dispatcher
  // (transformer_config.py); without shared experts there is nothing to overlap.
  const std::string root = WALLSIM_SOURCE_ROOT;
  json doc = moe_config();
  doc["training"]["overlap"] = {{"shared_expert", true}};
  CHECK_THROWS_WITH(
      run_config_from_json(doc, root + "/configs/examples/test.json"),
      Catch::Contains("training.overlap.shared_expert") && Catch::Contains("no shared experts"));
  doc["model"]["moe"]["shared_ffn_hidden"] = 2816;
  doc["parallel"]["moe_dispatcher"] = "allgather";
  CHECK_THROWS_WITH(run_config_from_json(doc, root + "/configs/examples/test.json"),
                    Catch::Contains("alltoall or flex dispatcher"));
}
