// Context parallelism in the step builder: chunk assignment, per-step attention work, the bytes
// each cp_comm_type moves per layer, the groups it moves them in, and the layout checks.
#include <algorithm>
#include <set>

#include <catch2/catch.hpp>

#include "models/step/cp_attention.hpp"
#include "sim/core/input_error.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// base_config (h 1024, 16 heads, 4 KV heads, d = 64, s 2048) with one layer on tp·cp GPUs.
json cp_config(std::int64_t tp, std::int64_t cp, const std::string& type) {
  json doc = base_config();
  doc["model"]["layers"] = 1;
  doc["num_gpus"] = tp * cp;
  doc["parallel"] = {{"tp", tp}, {"cp", cp}, {"cp_comm_type", type}};
  doc["training"]["global_batch"] = 1;
  return doc;
}

LayerDims dims_of(const json& doc) {
  return layer_dims(config_from(doc));
}

// Score elements a call computes: s_q·s_kv·heads·batch, times the kept fraction when causal.
double work(const AttentionShape& call) {
  const double full = static_cast<double>(call.batch * call.heads) *
                      static_cast<double>(call.seq_q) * static_cast<double>(call.seq_kv);
  return call.causal ? full * causal_kept_fraction(call.seq_q, call.seq_kv) : full;
}

double plan_work(const CpAttentionPlan& plan) {
  double total = 0;
  for (const auto& step : plan.forward) {
    for (const auto& call : step.blocks) total += work(call);
  }
  return total;
}

struct LayerCp {
  std::vector<CommPayload> forward, backward;
  std::vector<std::vector<int>> groups;  // every global rank of each CP op's group
};

LayerCp layer_cp(const json& doc, Fidelity fidelity = Fidelity::kSymmetric) {
  const StepProgram program = build(doc, fidelity);
  const OpGraph& g = program.graphs[0];
  LayerCp result;
  bool backward = false;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (label_has(g, op, "residual2 bwd")) backward = true;
    if (op.kind != OpKind::kCollective || !is(op, OpCategory::kCp)) continue;
    (backward ? result.backward : result.forward).push_back(payload_of(program, op));
    result.groups.push_back(program.group_ranks[op.group]);
  }
  return result;
}

double total(const std::vector<CommPayload>& payloads) {
  double sum = 0;
  for (const auto& p : payloads) sum += p.bytes;
  return sum;
}

}  // namespace

TEST_CASE("zig-zag: CP rank r holds chunks r and 2cp-1-r", "[models][step][cp]") {
  // mechanics.md §3.1: cp = 2 gives GPU0 chunks 0, 3 and GPU1 chunks 1, 2.
  CHECK(zigzag_chunks(0, 2) == std::array<std::int64_t, 2>{0, 3});
  CHECK(zigzag_chunks(1, 2) == std::array<std::int64_t, 2>{1, 2});
  // Every chunk of 2·cp is held exactly once.
  std::set<std::int64_t> seen;
  for (std::int64_t r = 0; r < 4; ++r) {
    for (std::int64_t chunk : zigzag_chunks(r, 4)) CHECK(seen.insert(chunk).second);
  }
  CHECK(seen.size() == 8);
}

TEST_CASE("balanced CP: every rank's attention work is s^2/(2cp) per head", "[models][step][cp]") {
  // The causal triangle holds s²/2 scores per head and sequence; split evenly over cp ranks,
  // each computes s²/(2·cp): for p2p the diagonal's (s/cp)²/2 plus cp − 1 half blocks of
  // (s/cp)²/2; for all-gather two chunks against their key prefixes; for a2a the whole
  // triangle over heads/cp.
  for (const std::string type : {"p2p", "all_gather", "a2a"}) {
    for (std::int64_t cp : {2, 4}) {
      CAPTURE(type, cp);
      // a2a over 4 needs the 4 KV heads whole on every TP rank: tp 1 there.
      const std::int64_t tp = type == "a2a" ? 1 : 2;
      const json doc = cp_config(tp, cp, type);
      const LayerDims d = dims_of(doc);
      const CpLayout layout = config_from(doc).layout.cp;
      const double s = 2048, heads_per_rank = 16.0 / static_cast<double>(tp);
      for (std::int64_t position = 0; position < cp; ++position) {
        CHECK(plan_work(cp_attention_plan(d, layout, position)) ==
              Approx(s * s / (2.0 * static_cast<double>(cp)) * heads_per_rank));
      }
    }
  }
}

TEST_CASE("contiguous CP: rank r computes r + 1/2 blocks, skipping keys from later ranks",
          "[models][step][cp]") {
  // A block is (s/cp)² scores; rank r sees the causal diagonal (½) and r whole earlier blocks.
  json doc = cp_config(2, 4, "p2p");
  doc["parallel"]["cp_load_balance"] = false;
  const LayerDims d = dims_of(doc);
  const CpLayout layout = config_from(doc).layout.cp;
  const double block = 512.0 * 512.0 * 8;
  for (std::int64_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    const CpAttentionPlan plan = cp_attention_plan(d, layout, r);
    CHECK(plan_work(plan) == Approx((static_cast<double>(r) + 0.5) * block));
    CHECK(plan.forward.size() == 4);  // the K and V still travel the whole ring
  }
}

TEST_CASE("p2p ring: cp - 1 K/V transfers forward, twice the volume backward",
          "[models][step][cp]") {
  // mechanics.md §3.2: per send 2·(s/cp)·b·(g/t)·d·2 bytes (K and V, bf16, GQA-sized):
  // tp 2, g = 4, d = 64, b = 1. Backward: K,V; then K,V + dK,dV; last dK,dV alone.
  for (std::int64_t cp : {2, 4}) {
    CAPTURE(cp);
    const double kv = 2.0 * (2048.0 / static_cast<double>(cp)) * 1 * (4.0 / 2) * 64 * 2;
    const LayerCp c = layer_cp(cp_config(2, cp, "p2p"));
    REQUIRE(c.forward.size() == static_cast<std::size_t>(cp - 1));
    for (const auto& p : c.forward) {
      CHECK(p.op == CollectiveOp::kSendRecv);
      CHECK(p.bytes == kv);
    }
    REQUIRE(c.backward.size() == static_cast<std::size_t>(cp));
    CHECK(c.backward.front().bytes == kv);
    CHECK(c.backward.back().bytes == kv);
    for (std::size_t i = 1; i + 1 < c.backward.size(); ++i) CHECK(c.backward[i].bytes == 2 * kv);
    CHECK(total(c.backward) == 2 * total(c.forward));
  }
}

TEST_CASE("a2a: Q, K, V and O all-to-all forward and backward", "[models][step][cp]") {
  // Each rank sends its s/cp tokens of Q, K, V ((a + 2g)/t heads) and of O (a/t heads):
  // cp 2, tp 2: 1024 tokens · (16 + 8)/2 · 64 · 2 bytes and 1024 · 8 · 64 · 2.
  const double qkv = 1024.0 * 12 * 64 * 2, out = 1024.0 * 8 * 64 * 2;
  const LayerCp c = layer_cp(cp_config(2, 2, "a2a"));
  REQUIRE(c.forward.size() == 2);
  CHECK(c.forward[0].op == CollectiveOp::kAllToAll);
  CHECK(c.forward[0].bytes == qkv);
  CHECK(c.forward[1].bytes == out);
  REQUIRE(c.backward.size() == 2);
  CHECK(c.backward[0].bytes == out);  // dO
  CHECK(c.backward[1].bytes == qkv);  // dQ, dK, dV
}

TEST_CASE("all_gather: K and V gathered forward, gathered again and dK, dV reduce-scattered",
          "[models][step][cp]") {
  // Gathered output: 2 (K, V) · s · b · (g/t) · d · 2 bytes = 2 · 2048 · 2 · 64 · 2.
  const double gathered = 2.0 * 2048 * 2 * 64 * 2;
  const LayerCp c = layer_cp(cp_config(2, 2, "all_gather"));
  REQUIRE(c.forward.size() == 1);
  CHECK(c.forward[0].op == CollectiveOp::kAllGather);
  CHECK(c.forward[0].bytes == gathered);
  REQUIRE(c.backward.size() == 2);
  CHECK(c.backward[0].op == CollectiveOp::kAllGather);
  CHECK(c.backward[1].op == CollectiveOp::kReduceScatter);
  CHECK(c.backward[1].bytes == gathered);
}

TEST_CASE("a2a+p2p: all-to-all inside consecutive CP ranks, rings across them",
          "[models][step][cp]") {
  // tp 2, cp 4 = a2a 2 × p2p 2: CP ranks of TP rank 0 are global 0, 2, 4, 6 (strided by tp);
  // all-to-all groups {0, 2} and {4, 6}, rings {0, 4} and {2, 6}. After the all-to-all a rank
  // holds s/p2p = 1024 tokens of g/(t·a2a) = 1 KV head: ring transfer 2 · 1024 · 1 · 64 · 2.
  json doc = cp_config(2, 4, "a2a+p2p");
  doc["parallel"]["hierarchical_cp"] = {2, 2};
  const LayerCp c = layer_cp(doc, Fidelity::kFull);
  const std::vector<int> a2a{0, 2}, ring{0, 4};
  REQUIRE(c.forward.size() == 3);  // a2a qkv, one ring step, a2a out
  CHECK(c.forward[0].op == CollectiveOp::kAllToAll);
  CHECK(c.groups[0] == a2a);
  CHECK(c.forward[1].op == CollectiveOp::kSendRecv);
  CHECK(c.forward[1].bytes == 2.0 * 1024 * 1 * 64 * 2);
  CHECK(c.groups[1] == ring);
  CHECK(c.forward[2].op == CollectiveOp::kAllToAll);
}

TEST_CASE("p2p CP groups are strided by tp in the default order", "[models][step][cp]") {
  // mechanics.md §3.1: t = 4, c = 2 gives CP groups [0, 4], [1, 5], ...
  json doc = cp_config(4, 2, "p2p");
  const LayerCp c = layer_cp(doc, Fidelity::kFull);
  REQUIRE(!c.groups.empty());
  CHECK(c.groups[0] == std::vector<int>{0, 4});
}

TEST_CASE("CP layout errors name the problem", "[models][step][cp]") {
  const auto rejects = [](const json& doc, const std::string& text) {
    CAPTURE(doc.dump(), text);
    try {
      config_from(doc);
      FAIL("accepted");
    } catch (const InputError& error) {
      CHECK(std::string(error.what()).find(text) != std::string::npos);
    }
  };
  // 16 heads / tp 2 = 8 and 4 KV heads / tp 2 = 2: a2a over 4 cannot split 2 KV heads.
  rejects(cp_config(2, 4, "a2a"), "key/value heads per TP rank");
  json doc = cp_config(2, 4, "a2a+p2p");
  doc["parallel"]["hierarchical_cp"] = {2, 4};
  rejects(doc, "must equal cp = 4");
  doc = cp_config(2, 4, "a2a+p2p");
  rejects(doc, "needs parallel.hierarchical_cp");
  doc = cp_config(2, 2, "p2p");
  doc["parallel"]["hierarchical_cp"] = {1, 2};
  rejects(doc, "only used with");
  doc = cp_config(2, 2, "p2p");
  doc["training"]["flash_attention"] = false;
  rejects(doc, "fused attention only");
  doc = cp_config(2, 2, "p2p");
  doc["training"]["seq_len"] = 2050;  // not a multiple of 2·cp = 4
  rejects(doc, "2·cp = 4");
}

TEST_CASE("p2p CP splits classes by CP position in symmetric fidelity", "[models][step][cp]") {
  // tp 2 · cp 4 · dp 1: the balanced ring gives each position its own block shapes and the
  // contiguous split its own work, one class per CP position; Ulysses (a2a) runs one program.
  json doc = cp_config(2, 4, "p2p");
  CHECK(build(doc).global_rank == std::vector<std::int64_t>{0, 2, 4, 6});
  CHECK(build(cp_config(1, 4, "a2a")).global_rank == std::vector<std::int64_t>{0});
  doc["parallel"]["cp_load_balance"] = false;
  CHECK(build(doc).global_rank == std::vector<std::int64_t>{0, 2, 4, 6});
}
