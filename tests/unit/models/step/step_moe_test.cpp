// The MoE layer in the step builder: all-to-all bytes per rank per layer for each dispatcher,
// capacity and drop arithmetic, expert gradients over expert DP, and the groups they use.
#include <algorithm>

#include <catch2/catch.hpp>

#include "models/flops.hpp"
#include "models/step/moe_ops.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// base_config's Llama-style layer (h 1024) with a MoE MLP: 8 experts of width 512, top-2, one
// layer, 8 GPUs as tp 1 · dp 8 with ep 8 (the EP group folds over the DP ranks), s 2048, b 1.
json moe_config(const std::string& dispatcher = "alltoall") {
  json doc = base_config();
  doc["model"]["layers"] = 1;
  doc["model"]["moe"] = {{"experts", 8}, {"topk", 2}, {"ffn_hidden", 512}};
  doc["parallel"] = {{"tp", 1}, {"ep", 8}, {"moe_dispatcher", dispatcher}};
  doc["training"]["global_batch"] = 8;
  return doc;
}

struct LayerEp {
  std::vector<CommPayload> forward, backward;
  std::vector<std::vector<int>> groups;
};

LayerEp layer_ep(const json& doc, Fidelity fidelity = Fidelity::kSymmetric) {
  const StepProgram program = build(doc, fidelity);
  const OpGraph& g = program.graphs[0];
  LayerEp result;
  bool backward = false;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (label_has(g, op, "residual2 bwd")) backward = true;
    if (op.kind != OpKind::kCollective || !is(op, OpCategory::kEp)) continue;
    (backward ? result.backward : result.forward).push_back(payload_of(program, op));
    result.groups.push_back(program.group_ranks[op.group]);
  }
  return result;
}

// One row of h in bf16.
constexpr double kRow = 1024.0 * 2;

}  // namespace

TEST_CASE("alltoall: dispatch and combine move T·k rows each way, twice per pass",
          "[models][step][moe]") {
  // mechanics.md §4.2: a rank sends T_loc·k token rows (T_loc = b·s = 2048, k = 2), dispatch and
  // combine, forward and backward: 4 all-to-alls of 2048·2·h·2 bytes over the EP group.
  // Dropless, the forward first all-gathers every rank's token count per expert (Megatron-Core's
  // alltoall dispatcher preprocess: E int64 counts from each of the ETP×EP ranks, 8·8·8 bytes).
  const LayerEp c = layer_ep(moe_config());
  REQUIRE(c.forward.size() == 3);
  REQUIRE(c.backward.size() == 2);
  CHECK(c.forward[0].op == CollectiveOp::kAllGather);
  CHECK(c.forward[0].bytes == 8.0 * 8 * 8);
  for (std::size_t i = 1; i < c.forward.size(); ++i) {
    CHECK(c.forward[i].op == CollectiveOp::kAllToAll);
    CHECK(c.forward[i].bytes == 2048.0 * 2 * kRow);
  }
  for (const auto& p : c.backward) {
    CHECK(p.op == CollectiveOp::kAllToAll);
    CHECK(p.bytes == 2048.0 * 2 * kRow);
  }
  for (const auto& group : c.groups) CHECK(group == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("alltoall: the permute waits for the token counts, which padded buffers do not need",
          "[models][step][moe]") {
  const StepProgram program = build(moe_config());
  const OpGraph& g = program.graphs[0];
  const auto counts = select(g, [&](const Op& op) { return label_has(g, op, "moe counts ag"); });
  const auto permute = select(g, [&](const Op& op) {
    return label_has(g, op, "permute fwd") && !label_has(g, op, "unpermute");
  });
  REQUIRE(counts.size() == 1);
  REQUIRE(permute.size() == 1);
  const auto deps = g.dependencies(permute[0]);
  CHECK(std::find(deps.begin(), deps.end(), counts[0]) != deps.end());
  // With a capacity (drop and pad) every split is known in advance: no gather.
  json padded = moe_config();
  padded["model"]["moe"]["capacity_factor"] = 1.0;
  const StepProgram capacity = build(padded);
  const OpGraph& pg = capacity.graphs[0];
  CHECK(select(pg, [&](const Op& op) { return label_has(pg, op, "moe counts ag"); }).empty());
}

TEST_CASE("alltoall: with several local experts the received rows are sorted and unsorted",
          "[models][step][moe]") {
  // ep 4 of 8 experts: 2 local experts. Uniform dropless routing sends each expert 1/8 of the
  // 4 ranks' T·k = 2048·2 rows: a rank receives 4·4096/4 = 4096 rows. Megatron-Core's
  // sort_chunks_by_idxs reorders them by expert after the dispatch and back before the
  // combine, in both passes: 4 copies of 4096 rows, each read and written (2·4096·h·2 bytes).
  json doc = moe_config();
  doc["parallel"]["ep"] = 4;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const auto sorts = select(g, [&](const Op& op) { return label_has(g, op, "sort chunks"); });
  REQUIRE(sorts.size() == 4);
  for (OpIndex i : sorts) CHECK(g.op(i).bytes == Approx(2.0 * 4096 * kRow));
  // One local expert (ep 8 of 8): the rows arrive grouped already, nothing to sort.
  const StepProgram one_each = build(moe_config());
  const OpGraph& og = one_each.graphs[0];
  CHECK(select(og, [&](const Op& op) { return label_has(og, op, "sort chunks"); }).empty());
}

TEST_CASE("allgather: all-gather and reduce-scatter of every token over ETPxEP",
          "[models][step][moe]") {
  // The gathered buffer is the T rows of each of the 8 ranks: 8·2048 rows of h, independent
  // of k (mechanics.md §4.2).
  const LayerEp c = layer_ep(moe_config("allgather"));
  REQUIRE(c.forward.size() == 2);
  CHECK(c.forward[0].op == CollectiveOp::kAllGather);
  CHECK(c.forward[1].op == CollectiveOp::kReduceScatter);
  for (const auto& p : c.forward) CHECK(p.bytes == 8.0 * 2048 * kRow);
}

TEST_CASE("flex: one exchange over ETPxEP sends a token to each node once", "[models][step][moe]") {
  // 8 GPUs on one node: each token crosses to min(k, 1 node) = 1 destination: T rows.
  const LayerEp c = layer_ep(moe_config("flex"));
  REQUIRE(c.forward.size() == 2);
  CHECK(c.forward[0].bytes == 2048.0 * kRow);
}

TEST_CASE("flex: a token reaches the domains holding at least one of its experts",
          "[models][step][moe]") {
  // One domain, or one expert per token: one destination.
  CHECK(expected_domains_reached(8, 2, 1) == 1.0);
  CHECK(expected_domains_reached(8, 1, 4) == Approx(1.0).epsilon(1e-12));
  // 8 experts over 4 domains (2 each), top-2: a given domain misses both with probability
  // C(6,2)/C(8,2) = 15/28, so 4·(1 − 15/28) = 13/7 domains, not min(k, D) = 2.
  CHECK(expected_domains_reached(8, 2, 4) == Approx(13.0 / 7.0).epsilon(1e-12));
  // DeepSeek-V3's 256 experts, top-8, EP64 on 8 nodes (32 experts each):
  // 8·(1 − C(224,8)/C(256,8)) = 5.2947 nodes (math.comb), against 8 for one copy per expert.
  CHECK(expected_domains_reached(256, 8, 8) == Approx(5.294652).epsilon(1e-6));
  // More experts chosen than lie outside one domain: every domain is reached.
  CHECK(expected_domains_reached(8, 7, 4) == 4.0);
}

TEST_CASE("flex: group-limited routing caps the domains a token reaches", "[models][step][moe]") {
  // DeepSeek-V3 at EP 64 on 8 nodes, one group of 32 experts per node, 4 of 8 groups chosen:
  // a node is missed when its group is not chosen (1/2) or is and none of the 8 experts drawn
  // from the 128 of the chosen groups is among its 32: 8·(1 − (1/2 + 1/2·C(96,8)/C(128,8)))
  // = 3.6290 nodes (math.comb), at most group_topk = 4.
  CHECK(expected_domains_reached(256, 8, 8, 8, 4) == Approx(3.629011).epsilon(1e-6));
  // Groups spanning two domains each (4 groups over 8 domains, 2 chosen, 64 experts, top-4):
  // 8·(1 − (1/2 + 1/2·C(24,4)/C(32,4))) = 2.8180.
  CHECK(expected_domains_reached(64, 4, 8, 4, 2) == Approx(2.818020).epsilon(1e-6));
  // Domains holding 4 whole groups each (16 groups of 4 over 4 domains, 4 chosen, top-6): a
  // domain holding j chosen groups (hypergeometric) is missed with C(16 − 4j, 6)/C(16, 6):
  // 4·(1 − Σ_j P(j)·C(16 − 4j, 6)/C(16, 6)) = 2.6859.
  CHECK(expected_domains_reached(64, 6, 4, 16, 4) == Approx(2.685883).epsilon(1e-6));
  // Every group chosen, or one group: no limit. Groups that neither hold nor span whole
  // domains (8 groups over 3 domains) are taken as not limited.
  CHECK(expected_domains_reached(256, 8, 8, 8, 8) == expected_domains_reached(256, 8, 8));
  CHECK(expected_domains_reached(24, 4, 3, 8, 2) == expected_domains_reached(24, 4, 3));
}

TEST_CASE("capacity: fixed per-expert buffers, padded, and the tokens over capacity dropped",
          "[models][step][moe]") {
  // T = 2048, k = 2, E = 8: C = ceil(2048·2/8 · cf) per expert and source rank. cf 1.25:
  // C = 640; a rank sends E·C = 5120 padded rows. Uniform routing drops nothing.
  MoeSpec moe;
  moe.experts = 8;
  moe.topk = 2;
  moe.ffn_hidden = 512;
  moe.capacity_factor = 1.25;
  MoeLoad load = moe_load(moe, 2048, 8);
  CHECK(load.capacity == 640);
  CHECK(load.sent_rows == 5120);
  CHECK(load.dropped_fraction == Approx(0).margin(1e-12));
  // Loads 4:1:1:1:1:1:1:1 (expert 0 draws 4/11 of the rows) with cf 1: C = 512 per source,
  // 8·512 = 4096 rows per expert. Expert 0 is routed 8·4096·4/11 = 11915.6 rows and keeps
  // 4096; the others (2978.9 each) keep all. Dropped: (11915.6 − 4096) / 32768 = 23.9%.
  moe.capacity_factor = 1.0;
  moe.imbalance.kind = RouterImbalance::Kind::loads;
  moe.imbalance.loads = {4, 1, 1, 1, 1, 1, 1, 1};
  load = moe_load(moe, 2048, 8);
  CHECK(load.capacity == 512);
  CHECK(load.dropped_fraction == Approx((8.0 * 4096 * 4 / 11 - 4096) / 32768));
}

TEST_CASE("imbalance: the busiest EP rank's rows pace the all-to-all", "[models][step][moe]") {
  // Dropless, loads 4:1:...:1 over 8 experts on ep 8: rank 0 receives 8·T·k·4/11 rows
  // = 8·4096·4/11 = 11915.6 against T·k = 4096 sent; the dispatch moves that many rows.
  json doc = moe_config();
  doc["model"]["moe"]["router_imbalance"] = {{"loads", {4, 1, 1, 1, 1, 1, 1, 1}}};
  const LayerEp c = layer_ep(doc);
  CHECK(c.forward[1].bytes == Approx(8.0 * 4096 * 4 / 11 * kRow));  // [0] gathers the counts
}

TEST_CASE("expert gradients reduce over expert DP, dense ones over DP", "[models][step][moe]") {
  // 16 GPUs, tp 1, ep 4: EDP = 16/4 = 4, DP = 16. Local experts 8/4 = 2, each fc1 (SwiGLU,
  // 2·512·1024) + fc2 (1024·512) = 1,572,864 parameters; with fp32 gradients the expert
  // all-reduce moves 2·1,572,864·4 bytes over a group of 4.
  json doc = moe_config();
  doc["num_gpus"] = 16;
  doc["parallel"]["ep"] = 4;
  doc["training"]["global_batch"] = 16;
  const StepProgram program = build(doc, Fidelity::kFull);
  const OpGraph& g = program.graphs[0];
  bool expert_found = false;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCollective || !is(op, OpCategory::kDp)) continue;
    const auto& ranks = program.group_ranks[op.group];
    if (ranks.size() == 4) {
      expert_found = true;
      CHECK(payload_of(program, op).bytes == 2.0 * 1572864 * 4);
      CHECK(ranks == std::vector<int>{0, 4, 8, 12});
    } else {
      CHECK(ranks.size() == 16);
    }
  }
  CHECK(expert_found);
}

TEST_CASE("an MTP layer runs after the output layer on the last stage, once per micro-batch",
          "[models][step][moe]") {
  // 8 sequences over dp 8 with pp 1: one micro-batch per rank, so one MTP projection forward
  // and one MTP decoder layer (index L = 1, an MoE layer like the last) forward and backward.
  json doc = moe_config();
  doc["model"]["mtp_layers"] = 1;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  int projections = 0, mtp_layer_ops = 0;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (label_has(g, op, "mtp0 projection fwd")) ++projections;
    if (label_has(g, op, "L1 experts fc1 fwd")) ++mtp_layer_ops;
  }
  CHECK(projections == 1);
  CHECK(mtp_layer_ops == 1);
  // Its model FLOPs add, per token (2048 on the rank, tp 1), one decoder layer typed like the
  // last, the projection and one more logits GEMM (megatron_formulas.md §4).
  const StepProgram base = build(moe_config());
  const ModelSpec m = config_from(doc).model;
  const double per_token = attention_linear_flops_per_token(m) +
                           attention_core_flops_per_token(m, 2048) +
                           layer_mlp_flops_per_token(m, 0) + mtp_projection_flops_per_token(m) +
                           logits_flops_per_token(m, 1);
  CHECK(program.model_flops[0] - base.model_flops[0] == Approx(2048.0 * per_token));
}
