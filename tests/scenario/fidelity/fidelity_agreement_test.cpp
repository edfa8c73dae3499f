// Symmetric fidelity simulates one rank per class (pipeline stage) and full fidelity every
// rank; the symmetric shortcut is sound only if the two agree within 1% on step time
// and peak memory wherever both run. Layouts use real sizes (up to 512 GPUs) with few layers
// and micro-batches, so the full runs stay fast.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/network_comm_service.hpp"
#include "models/run/simulate.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

// A Llama-like model, narrow enough to simulate 512 ranks quickly.
json small_model(int layers, bool tied) {
  return {{"layers", layers},       {"hidden", 2048},     {"heads", 16},
          {"kv_heads", 8},          {"ffn_hidden", 5632}, {"vocab", 32000},
          {"activation", "swiglu"}, {"norm", "rmsnorm"},  {"tied_embeddings", tied}};
}

json layout_config(int gpus, json parallel, json training, int layers = 8, bool tied = false) {
  json t = {{"seq_len", 4096}, {"micro_batch", 1}, {"precision", "bf16"}};
  t.update(training);
  return {{"model", small_model(layers, tied)},
          {"cluster", "../clusters/dgx-h100.json"},
          {"num_gpus", gpus},
          {"parallel", parallel},
          {"training", t},
          {"simulation", {{"network", "flow"}}}};
}

SimulationResult run(json document, const std::string& fidelity, double leaf_oversubscription) {
  const std::string root = WALLSIM_SOURCE_ROOT;
  document["simulation"]["fidelity"] = fidelity;
  RunConfig config = run_config_from_json(document, root + "/configs/examples/test.json");
  config.cluster.fabric.leaf_oversubscription = leaf_oversubscription;
  const Profile profile = load_profile(root + "/calibration/profiles/h100-sxm.json");
  return simulate(config, profile.gpu, profile.comm);
}

double relative_gap(double a, double b) {
  return std::abs(a - b) / std::max(std::abs(a), std::abs(b));
}

// Step time, and per stage the simulated peak memory, agree within 1%.
void check_agreement(const json& document, double leaf_oversubscription = 1.0) {
  const SimulationResult symmetric = run(document, "symmetric", leaf_oversubscription);
  const SimulationResult full = run(document, "full", leaf_oversubscription);
  INFO("layout " << full.summary.layout);
  REQUIRE(full.program.graphs.size() == static_cast<std::size_t>(document["num_gpus"].get<int>()));
  REQUIRE(symmetric.program.graphs.size() < full.program.graphs.size());
  INFO("step time: symmetric " << symmetric.summary.iteration_time_s << " s, full "
                               << full.summary.iteration_time_s << " s");
  CHECK(relative_gap(symmetric.summary.iteration_time_s, full.summary.iteration_time_s) < 0.01);
  REQUIRE(symmetric.summary.per_stage.size() == full.summary.per_stage.size());
  for (std::size_t s = 0; s < full.summary.per_stage.size(); ++s) {
    INFO("stage " << s);
    CHECK(relative_gap(symmetric.summary.per_stage[s].simulated_peak,
                       full.summary.per_stage[s].simulated_peak) < 0.01);
  }
}

}  // namespace

TEST_CASE("symmetric agrees with full: tp8 sp pp4 dp16 on 512 GPUs, distributed optimizer",
          "[scenario][fidelity]") {
  check_agreement(layout_config(512, {{"tp", 8}, {"sequence_parallel", true}, {"pp", 4}},
                                {{"global_batch", 64}, {"distributed_optimizer", true}}));
}

TEST_CASE("symmetric agrees with full: tp4 sp pp2 vpp2 dp8 on 64 GPUs (interleaved)",
          "[scenario][fidelity]") {
  check_agreement(layout_config(64, {{"tp", 4}, {"sequence_parallel", true}, {"pp", 2}, {"vpp", 2}},
                                {{"global_batch", 32}, {"distributed_optimizer", true}}));
}

TEST_CASE("symmetric agrees with full: tp4 pp8 vpp2 dp16 on 512 GPUs, no SP, plain optimizer",
          "[scenario][fidelity]") {
  check_agreement(layout_config(512, {{"tp", 4}, {"pp", 8}, {"vpp", 2}},
                                {{"global_batch", 128}, {"distributed_optimizer", false}}, 16));
}

TEST_CASE("symmetric agrees with full: tp8 sp dp64 on 512 GPUs, overlapped DP communication",
          "[scenario][fidelity]") {
  check_agreement(
      layout_config(512, {{"tp", 8}, {"sequence_parallel", true}},
                    {{"global_batch", 128},
                     {"distributed_optimizer", true},
                     {"overlap", {{"dp_grad_reduce", true}, {"dp_param_gather", true}}}},
                    4));
}

TEST_CASE("symmetric agrees with full: tp1 pp4 dp32 on 128 GPUs (DP rings inside nodes)",
          "[scenario][fidelity]") {
  check_agreement(layout_config(128, {{"tp", 1}, {"pp", 4}},
                                {{"global_batch", 128}, {"distributed_optimizer", true}}));
}

TEST_CASE("symmetric agrees with full: hybrid sharding, ZeRO-1 and ZeRO-3, shard groups of 8",
          "[scenario][fidelity]") {
  // tp1 pp2 dp32 on 64 GPUs: each shard group is one node's 8 DP ranks, the 4 replicas of a
  // shard sit on 4 nodes; a 4:1 leaf makes the replica all-reduces contend.
  for (const char* sharding : {"optimizer", "params"}) {
    INFO(sharding);
    check_agreement(
        layout_config(64,
                      {{"tp", 1}, {"pp", 2}, {"data_sharding", sharding}, {"fsdp_shard_group", 8}},
                      {{"global_batch", 64}, {"distributed_optimizer", true}}),
        4.0);
  }
}

TEST_CASE("symmetric agrees with full: tp8 sp pp8 vpp2 dp8 on 512 GPUs, selective recompute",
          "[scenario][fidelity]") {
  check_agreement(layout_config(
      512, {{"tp", 8}, {"sequence_parallel", true}, {"pp", 8}, {"vpp", 2}},
      {{"global_batch", 64}, {"distributed_optimizer", true}, {"recompute", "selective"}}, 16));
}

TEST_CASE("symmetric agrees with full: tied embeddings across pp4 (embedding group)",
          "[scenario][fidelity]") {
  check_agreement(layout_config(64, {{"tp", 4}, {"sequence_parallel", true}, {"pp", 4}},
                                {{"global_batch", 32}, {"distributed_optimizer", true}}, 8,
                                /*tied=*/true));
}

// Uneven stages: the first and last stages hold fewer layers, so every stage is its own class
// with its own program and memory.
TEST_CASE("symmetric agrees with full where classes split: uneven first and last stages",
          "[scenario][fidelity]") {
  check_agreement(layout_config(256,
                                {{"tp", 8},
                                 {"sequence_parallel", true},
                                 {"pp", 4},
                                 {"first_stage_layers", 1},
                                 {"last_stage_layers", 2}},
                                {{"global_batch", 32}, {"distributed_optimizer", true}}, 9));
}

// A GPU's NIC carries its DP tree all-reduce and its pipeline send at once. Symmetric replays
// one rank per stage, so the DP collective must meet the other DP replicas' pipeline sends on
// the NICs it crosses (start_instances charges every copy): without them symmetric was 2.5%
// faster than full here.
TEST_CASE("symmetric agrees with full: tp2 pp8 vpp2 dp32 on 512 GPUs, plain optimizer",
          "[scenario][fidelity]") {
  check_agreement(layout_config(512, {{"tp", 2}, {"pp", 8}, {"vpp", 2}},
                                {{"global_batch", 256}, {"distributed_optimizer", false}}, 16));
}

// The same with every overlap on: the DP all-reduce then also runs beside TP and pipeline
// traffic of the other replicas (4.9% apart before the copies were charged).
TEST_CASE("symmetric agrees with full: tp2 pp8 vpp2 dp32 on 512 GPUs, overlapped communication",
          "[scenario][fidelity]") {
  check_agreement(layout_config(
      512, {{"tp", 2}, {"pp", 8}, {"vpp", 2}},
      {{"global_batch", 256},
       {"distributed_optimizer", false},
       {"overlap", {{"tp_comm", true}, {"dp_grad_reduce", true}, {"dp_param_gather", true}}}},
      16));
}

// Classes split by uneven stages, with copies charged across them (2.2% apart before).
TEST_CASE("symmetric agrees with full where classes split: tp2 pp4 dp32, uneven stages",
          "[scenario][fidelity]") {
  check_agreement(layout_config(
      256, {{"tp", 2}, {"pp", 4}, {"first_stage_layers", 1}, {"last_stage_layers", 2}},
      {{"global_batch", 128},
       {"distributed_optimizer", false},
       {"overlap", {{"dp_grad_reduce", true}, {"dp_param_gather", true}}}},
      9));
}

// tp2 dp2 pp2 (ranks tp + 2 dp + 4 pp), one replayed rank per stage (0 and 4): each class is
// spanned by the rank's TP group and DP group; the embedding group {0, 4} holds both replayed
// ranks and spans nothing. In full fidelity every member is replayed: no copies.
TEST_CASE("class offsets come from the groups that hold one replayed rank",
          "[scenario][fidelity]") {
  const std::vector<std::int64_t> global_rank{0, 4};
  const std::vector<std::vector<RankIndex>> groups{{0}, {0}, {1}, {1}, {0, 1}};
  const std::vector<std::vector<int>> group_ranks{{0, 1}, {0, 2}, {4, 5}, {4, 6}, {0, 4}};
  const auto offsets = class_offsets(global_rank, groups, group_ranks);
  CHECK(offsets == std::vector<std::vector<int>>{{0, 1, 2, 3}, {0, 1, 2, 3}});
  const std::vector<std::int64_t> every_rank{0, 1, 2, 3};
  const std::vector<std::vector<RankIndex>> full_groups{{0, 1}, {2, 3}, {0, 2}, {1, 3}};
  const std::vector<std::vector<int>> full_ranks{{0, 1}, {2, 3}, {0, 2}, {1, 3}};
  CHECK(class_offsets(every_rank, full_groups, full_ranks) ==
        std::vector<std::vector<int>>(4, std::vector<int>{0}));
}

TEST_CASE("symmetric agrees with full: tp4 sp cp4 pp2 dp2 on 64 GPUs, p2p ring across nodes",
          "[scenario][fidelity][cp]") {
  // CP groups stride by tp = 4, so each 4-rank ring spans two nodes; seq 16K, 4K per rank.
  check_agreement(
      layout_config(64, {{"tp", 4}, {"sequence_parallel", true}, {"cp", 4}, {"pp", 2}},
                    {{"seq_len", 16384}, {"global_batch", 8}, {"distributed_optimizer", true}}));
}

TEST_CASE("symmetric agrees with full where classes split: contiguous CP (no load balance)",
          "[scenario][fidelity][cp]") {
  // Without the zig-zag split CP rank r does r + 1/2 blocks of attention: one class per CP
  // position.
  check_agreement(layout_config(
      64,
      {{"tp", 4}, {"sequence_parallel", true}, {"cp", 4}, {"cp_load_balance", false}, {"pp", 2}},
      {{"seq_len", 16384}, {"global_batch", 8}, {"distributed_optimizer", true}}));
}

TEST_CASE("symmetric agrees with full: a2a+p2p CP and all_gather CP", "[scenario][fidelity][cp]") {
  json parallel = {{"tp", 2}, {"sequence_parallel", true}, {"cp", 4}, {"pp", 2}};
  parallel["cp_comm_type"] = "a2a+p2p";
  parallel["hierarchical_cp"] = {2, 2};
  check_agreement(layout_config(
      32, parallel, {{"seq_len", 16384}, {"global_batch", 8}, {"distributed_optimizer", true}}));
  parallel.erase("hierarchical_cp");
  parallel["cp_comm_type"] = "all_gather";
  check_agreement(layout_config(
      32, parallel, {{"seq_len", 16384}, {"global_batch", 8}, {"distributed_optimizer", true}}));
}

TEST_CASE("symmetric agrees with full: MoE, EP across nodes, skewed routing, EP overlap",
          "[scenario][fidelity][moe]") {
  // 16 experts over ep 8 (stride 2 with order tp-cp-dp-ep-pp: both nodes), pp 2 with vpp 2
  // and the EP overlap, routing skewed so one EP rank is the busiest.
  json doc =
      layout_config(16, {{"tp", 1}, {"pp", 2}, {"vpp", 2}, {"ep", 8}, {"order", "tp-cp-dp-ep-pp"}},
                    {{"global_batch", 16},
                     {"distributed_optimizer", true},
                     {"overlap", {{"ep_comm", true}, {"dp_grad_reduce", true}}}});
  doc["model"]["moe"] = {
      {"experts", 16}, {"topk", 2}, {"ffn_hidden", 1408}, {"router_imbalance", {{"skew", 0.5}}}};
  check_agreement(doc);
}
