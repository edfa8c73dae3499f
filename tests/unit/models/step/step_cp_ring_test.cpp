// The blocks each p2p ring step attends and the kernels that merge them, as Transformer
// Engine's AttnFuncWithCPAndKVP2P runs them (docs/reference/attention.md): per step and CP
// rank, the block's queries and keys, and the merge kernels' bytes.
#include <catch2/catch.hpp>

#include "models/step/cp_attention.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// base_config (h 1024, 16 heads, 4 KV heads, d = 64, s 2048), one layer, tp 2 (8 heads, 2 KV
// heads per rank), cp ranks in a p2p ring.
CpAttentionPlan ring_plan(std::int64_t cp, std::int64_t rank) {
  json doc = base_config();
  doc["model"]["layers"] = 1;
  doc["num_gpus"] = 2 * cp;
  doc["parallel"] = {{"tp", 2}, {"cp", cp}, {"cp_comm_type", "p2p"}};
  doc["training"]["global_batch"] = 1;
  const RunConfig config = config_from(doc);
  return cp_attention_plan(layer_dims(config), config.layout.cp, rank);
}

struct Block {
  std::int64_t seq_q, seq_kv;
  bool causal;
};

std::vector<Block> blocks(const std::vector<CpRingStep>& steps) {
  std::vector<Block> out;
  for (const CpRingStep& step : steps) {
    REQUIRE(step.blocks.size() == 1);
    const AttentionShape& b = step.blocks.front();
    CHECK(b.heads == 8);
    CHECK(b.kv_heads == 2);
    out.push_back({b.seq_q, b.seq_kv, b.causal});
  }
  return out;
}

void check_blocks(const std::vector<CpRingStep>& steps, const std::vector<Block>& expected) {
  const std::vector<Block> got = blocks(steps);
  REQUIRE(got.size() == expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i].seq_q == expected[i].seq_q);
    CHECK(got[i].seq_kv == expected[i].seq_kv);
    CHECK(got[i].causal == expected[i].causal);
  }
}

}  // namespace

TEST_CASE("cp 2: the diagonal, then half the queries or half the keys by the keys' origin",
          "[models][step][cp]") {
  // s' = 2048/2 = 1024 tokens per rank (two chunks of 512). Rank 0 receives rank 1's keys
  // (chunks 1, 2, later in the sequence than its chunk 0): only its second chunk (3) sees them,
  // all 1024 of them. Rank 1 receives rank 0's keys (chunks 0, 3): both its chunks see chunk 0,
  // the first half. TE's backward runs the same blocks in reverse, the diagonal last.
  check_blocks(ring_plan(2, 0).forward, {{1024, 1024, true}, {512, 1024, false}});
  check_blocks(ring_plan(2, 0).backward, {{512, 1024, false}, {1024, 1024, true}});
  check_blocks(ring_plan(2, 1).forward, {{1024, 1024, true}, {1024, 512, false}});
  check_blocks(ring_plan(2, 1).backward, {{1024, 512, false}, {1024, 1024, true}});
}

TEST_CASE("cp 4: step i takes the keys of rank r - i, earlier for i <= r", "[models][step][cp]") {
  // s' = 512. Rank 0: every received block comes from a later rank (256 queries × 512 keys);
  // rank 3: every one from an earlier rank (512 × 256); rank 2: steps 1 and 2 from ranks 1
  // and 0 (earlier), step 3 from rank 3 (later).
  check_blocks(ring_plan(4, 0).forward,
               {{512, 512, true}, {256, 512, false}, {256, 512, false}, {256, 512, false}});
  check_blocks(ring_plan(4, 3).forward,
               {{512, 512, true}, {512, 256, false}, {512, 256, false}, {512, 256, false}});
  check_blocks(ring_plan(4, 2).forward,
               {{512, 512, true}, {512, 256, false}, {512, 256, false}, {256, 512, false}});
  check_blocks(ring_plan(4, 2).backward,
               {{256, 512, false}, {512, 256, false}, {512, 256, false}, {512, 512, true}});
}

TEST_CASE("ring steps merge their partial results with memory-bound kernels",
          "[models][step][cp]") {
  // cp 2, rank 0, b = 1, h = 8 heads, g = 2 KV heads, d = 64 (cp_merge_bytes' derivation):
  //  forward statistics (fp32, one per query and head): step 0 a clone of 8·1024 values,
  //    2·4·8192; step 1 a merge over the 512 queries it touched, 3·4·(8·512).
  //  forward outputs (bf16 8·q·64) after the ring: step 0 writes out from out_0, 2·2·(8·1024·64)
  //    + both statistics 2·4·(8·1024); step 1 adds into the second half, 3·2·(8·512·64)
  //    + 2·4·(8·512).
  //  backward: step 0 (512 queries × 1024 keys) copies dQ (8·512·64) and dK, dV (2·2·1024·64),
  //    2·2·(262144 + 262144); step 1 (the diagonal) adds them, 3·2·(8·1024·64 + 2·2·1024·64).
  const CpAttentionPlan plan = ring_plan(2, 0);
  REQUIRE(plan.forward.size() == 2);
  CHECK(plan.forward[0].merge_bytes == 2.0 * 4 * 8192);
  CHECK(plan.forward[1].merge_bytes == 3.0 * 4 * (8 * 512));
  REQUIRE(plan.output_merge_bytes.size() == 2);
  CHECK(plan.output_merge_bytes[0] == 2.0 * 2 * (8 * 1024 * 64) + 2.0 * 4 * (8 * 1024));
  CHECK(plan.output_merge_bytes[1] == 3.0 * 2 * (8 * 512 * 64) + 2.0 * 4 * (8 * 512));
  REQUIRE(plan.backward.size() == 2);
  CHECK(plan.backward[0].merge_bytes == 2.0 * 2 * (262144 + 262144));
  CHECK(plan.backward[1].merge_bytes == 3.0 * 2 * (8 * 1024 * 64 + 2 * 2 * 1024 * 64));
}

TEST_CASE("a step's merge runs after its attention on the compute stream", "[models][step][cp]") {
  // Forward, cp 2: attn fwd 0, its statistics merge, attn fwd 1, its merge, then the two
  // output merges; backward: each block followed by its gradient merge.
  json doc = base_config();
  doc["model"]["layers"] = 1;
  doc["num_gpus"] = 4;
  doc["parallel"] = {{"tp", 2}, {"cp", 2}, {"cp_comm_type", "p2p"}};
  doc["training"]["global_batch"] = 1;
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  std::vector<std::string> order;
  for (OpIndex i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::kCompute || !is(op, OpCategory::kAttention)) continue;
    for (const char* name : {"attn fwd 0", "attn lse merge 0", "attn fwd 1", "attn lse merge 1",
                             "attn out merge 0", "attn out merge 1", "attn bwd 0",
                             "attn dqkv merge 0", "attn bwd 1", "attn dqkv merge 1"}) {
      if (label_has(g, op, name)) order.push_back(name);
    }
  }
  CHECK(order == std::vector<std::string>{"attn fwd 0", "attn lse merge 0", "attn fwd 1",
                                          "attn lse merge 1", "attn out merge 0",
                                          "attn out merge 1", "attn bwd 0", "attn dqkv merge 0",
                                          "attn bwd 1", "attn dqkv merge 1"});
}
