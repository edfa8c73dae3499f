// Tensor- and pipeline-parallel communication of the step builder, and the groups it names.
#include <map>
#include <set>

#include <catch2/catch.hpp>

#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// One layer, one micro-batch, tp 2 on 2 GPUs: the TP collectives of that layer's forward and
// backward (the layer's ops carry its index; the embedding and output layer do not).
struct LayerCollectives {
  std::vector<CommPayload> forward, backward;
};

LayerCollectives layer_collectives(json doc) {
  doc["model"]["layers"] = 1;
  doc["num_gpus"] = 2;
  doc["training"]["global_batch"] = 1;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  LayerCollectives result;
  bool backward = false;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (label_has(g, op, "residual2 bwd")) backward = true;
    if (op.kind != OpKind::kCollective || !op.layer || !is(op, OpCategory::kTp)) continue;
    (backward ? result.backward : result.forward).push_back(payload_of(program, op));
  }
  return result;
}

int count(const std::vector<CommPayload>& payloads, CollectiveOp op) {
  int n = 0;
  for (const auto& p : payloads) n += p.op == op ? 1 : 0;
  return n;
}

// S of every TP collective of a layer: [s, b, h] in bf16 = 2048 · 1 · 1024 · 2 bytes.
constexpr double kLayerTensorBytes = 2048.0 * 1 * 1024 * 2;

}  // namespace

TEST_CASE("without SP a layer all-reduces [s,b,h] twice forward and twice backward over TP",
          "[models][step]") {
  // mechanics.md §1.1: g (row-parallel) all-reduces forward after proj and FC2; f
  // (column-parallel) all-reduces the grad-input of QKV and FC1 backward.
  const LayerCollectives c = layer_collectives(base_config());
  REQUIRE(c.forward.size() == 2);
  REQUIRE(c.backward.size() == 2);
  for (const auto* list : {&c.forward, &c.backward}) {
    CHECK(count(*list, CollectiveOp::kAllReduce) == 2);
    for (const auto& p : *list) CHECK(p.bytes == kLayerTensorBytes);
  }
}

TEST_CASE("with SP a layer gathers twice and scatters twice forward, gathers 4 times backward",
          "[models][step]") {
  // mechanics.md §1.1: forward AG(ln1) → QKV, RS after proj, AG(ln2) → FC1, RS after FC2;
  // backward AG of the grad-output of FC2 and proj, re-AG of ln1/ln2 outputs for the wgrads,
  // RS of the QKV and FC1 grad-input. Every one moves the full [s, b, h] tensor.
  json doc = base_config();
  doc["parallel"]["sequence_parallel"] = true;
  const LayerCollectives c = layer_collectives(doc);
  CHECK(count(c.forward, CollectiveOp::kAllGather) == 2);
  CHECK(count(c.forward, CollectiveOp::kReduceScatter) == 2);
  CHECK(c.forward.size() == 4);
  CHECK(count(c.backward, CollectiveOp::kAllGather) == 4);
  CHECK(count(c.backward, CollectiveOp::kReduceScatter) == 2);
  CHECK(c.backward.size() == 6);
  for (const auto& p : c.forward) CHECK(p.bytes == kLayerTensorBytes);
  for (const auto& p : c.backward) CHECK(p.bytes == kLayerTensorBytes);
}

TEST_CASE("TP comm overlap ring-exchanges gathers on copy engines and pipelines scatters in 4",
          "[models][step]") {
  // TE defaults (mechanics.md §2.2): qkv/fc1 fprop AG as a ring of tp steps, each moving one
  // chunk S/tp to the neighbour, on the copy engine; proj/fc2 fprop RS "pipeline" with 4
  // splits, each an RS of S/4 on SMs.
  json doc = base_config();
  doc["parallel"]["sequence_parallel"] = true;
  doc["parallel"]["tp"] = 4;
  doc["training"]["overlap"] = {{"tp_comm", true}};
  doc["model"]["layers"] = 1;
  doc["num_gpus"] = 4;
  doc["training"]["global_batch"] = 1;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const auto ring = select(g, [&](const Op& op) {
    return op.kind == OpKind::kCollective && label_has(g, op, "qkv fwd ring");
  });
  REQUIRE(ring.size() == 3);  // tp − 1 steps; the local chunk needs none
  for (OpIndex i : ring) {
    CHECK_FALSE(g.op(i).occupies_sms);
    CHECK(payload_of(program, g.op(i)).op == CollectiveOp::kSendRecv);
    CHECK(payload_of(program, g.op(i)).bytes == kLayerTensorBytes / 4);
  }
  // GEMM piece i waits for ring step i: each piece's dependencies include its step.
  const auto qkv_pieces = select(
      g, [&](const Op& op) { return op.kind == OpKind::kCompute && label_has(g, op, "qkv fwd "); });
  REQUIRE(qkv_pieces.size() == 4);
  CHECK(g.dependencies(qkv_pieces[0]).empty());
  for (std::size_t i = 1; i < 4; ++i) {
    CHECK(g.dependencies(qkv_pieces[i]) == std::vector<OpIndex>{ring[i - 1]});
  }
  const auto scatter = select(g, [&](const Op& op) {
    return op.kind == OpKind::kCollective && label_has(g, op, "proj rs");
  });
  REQUIRE(scatter.size() == 4);
  for (OpIndex i : scatter) {
    CHECK(g.op(i).occupies_sms);
    CHECK(payload_of(program, g.op(i)).op == CollectiveOp::kReduceScatter);
    CHECK(payload_of(program, g.op(i)).bytes == kLayerTensorBytes / 4);
  }
}

TEST_CASE("pipeline transfers carry [s/t, b, h] with SP and every send meets a receive",
          "[models][step]") {
  json doc = base_config();
  doc["parallel"] = {{"tp", 2}, {"sequence_parallel", true}, {"pp", 4}};
  doc["training"]["global_batch"] = 8;
  doc["num_gpus"] = 8;  // tp 2 × pp 4, dp 1
  const StepProgram program = build(doc, Fidelity::kFull);
  // mechanics.md §6.3: [s/c/(t if SP), b, h] in bf16 = 2048/2 · 1 · 1024 · 2 bytes.
  const double bytes = 2048.0 / 2 * 1024 * 2;
  std::map<std::pair<RankIndex, RankIndex>, int> sends, receives;
  for (std::size_t r = 0; r < program.graphs.size(); ++r) {
    const OpGraph& g = program.graphs[r];
    for (OpIndex i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      if (op.kind != OpKind::kSend && op.kind != OpKind::kRecv) continue;
      CHECK(is(op, OpCategory::kPp));
      CHECK(payload_of(program, op).bytes == bytes);
      const auto self = static_cast<RankIndex>(r);
      if (op.kind == OpKind::kSend) ++sends[{self, op.peer}];
      if (op.kind == OpKind::kRecv) ++receives[{op.peer, self}];
    }
  }
  CHECK(sends == receives);
  // Each of the 3 stage boundaries of each of the 2 TP ranks carries 8 activations forward
  // and 8 gradients back, each direction of a pair once per micro-batch.
  CHECK(sends.size() == 2 * 3 * 2);
  for (const auto& [pair, n] : sends) CHECK(n == 8);
}

TEST_CASE("symmetric builds one rank per stage, full builds every GPU", "[models][step]") {
  json doc = base_config();
  doc["parallel"] = {{"tp", 2}, {"pp", 2}};
  doc["num_gpus"] = 8;
  doc["training"]["global_batch"] = 4;
  const StepProgram symmetric = build(doc);
  const StepProgram full = build(doc, Fidelity::kFull);
  CHECK(symmetric.graphs.size() == 2);
  CHECK(symmetric.global_rank == std::vector<std::int64_t>{0, 4});  // stride of pp: tp·dp = 4
  CHECK(symmetric.stage == std::vector<std::int64_t>{0, 1});
  CHECK(full.graphs.size() == 8);
  // Ranks of one stage run the same program.
  CHECK(full.graphs[5].size() == symmetric.graphs[1].size());
}

TEST_CASE("replay groups carry the real TP and DP×CP groups of Megatron's layout",
          "[models][step]") {
  json doc = base_config();
  doc["parallel"] = {{"tp", 8}};
  doc["model"]["kv_heads"] = 8;
  doc["num_gpus"] = 16;  // tp 8 × dp 2
  doc["training"]["global_batch"] = 2;
  const StepProgram full = build(doc, Fidelity::kFull);
  const OpGraph& g = full.graphs[9];
  std::vector<int> tp_group, dp_group;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCollective) continue;
    if (is(op, OpCategory::kTp)) tp_group = full.group_ranks[op.group];
    if (is(op, OpCategory::kDp)) dp_group = full.group_ranks[op.group];
  }
  // order tp-cp-ep-dp-pp: TP groups are runs of 8; DP groups stride 8 (mechanics.md §6.1).
  CHECK(tp_group == std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(dp_group == std::vector<int>{1, 9});
  for (std::size_t gi = 0; gi < full.groups.size(); ++gi) {
    CHECK(full.groups[gi].size() == full.group_ranks[gi].size());
  }
  // Symmetric: the representative (global 0) is the only simulated member of its groups.
  const StepProgram symmetric = build(doc);
  for (std::size_t gi = 0; gi < symmetric.groups.size(); ++gi) {
    CHECK(symmetric.groups[gi] == std::vector<RankIndex>{0});
  }
  CHECK(symmetric.group_ranks.size() == 2);  // TP {0..7} and DP {0, 8}
}

TEST_CASE("payloads are deduplicated", "[models][step]") {
  const StepProgram program = build(base_config());
  std::set<std::pair<CollectiveOp, double>> distinct;
  for (const auto& p : program.payloads) distinct.insert({p.op, p.bytes});
  CHECK(distinct.size() == program.payloads.size());
}
