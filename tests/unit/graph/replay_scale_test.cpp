// A larger, seeded, pipeline-like replay: it must finish, respect every ordering rule, and
// repeat exactly.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "fake_comm.hpp"
#include "sim/graph/replay.hpp"

using namespace wallsim;
using namespace wallsim::test;

namespace {

// 64 ranks = 4 pipeline stages x 16 ranks; a stage is 4 TP groups of 4, and the ranks of a
// stage with the same TP position form a DP group of 4. Per micro-step, each rank:
//   stream 1: recv from the previous stage (not on stage 0), TP collective
//   stream 0: random compute before and after the collective
//   stream 2: send to the next stage (not on the last stage); every 25 steps a DP collective
// TP peers run the same program shape, so collective ordinals line up; blocking sends can not
// deadlock because the last stage never sends.
constexpr int kStages = 4;
constexpr int kPerStage = 16;
constexpr int kTp = 4;
constexpr int kRanks = kStages * kPerStage;
constexpr int kSteps = 400;  // 5.5 ops per step on average: about 2,200 ops per rank

struct Cluster {
  std::vector<OpGraph> graphs;
  std::vector<std::vector<RankIndex>> groups;
};

GroupIndex tp_group(int rank) {
  return static_cast<GroupIndex>(rank / kTp);
}
GroupIndex dp_group(int rank) {
  const int stage = rank / kPerStage;
  return static_cast<GroupIndex>(kRanks / kTp + stage * kTp + rank % kTp);
}

std::vector<std::vector<RankIndex>> make_groups() {
  std::vector<std::vector<RankIndex>> groups(kRanks / kTp + kStages * kTp);
  for (int r = 0; r < kRanks; ++r) {
    groups[tp_group(r)].push_back(r);
    groups[dp_group(r)].push_back(r);
  }
  return groups;
}

void add_step(OpGraph& graph, int rank, int step, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> duration_us(1.0, 50.0);
  std::uniform_int_distribution<int> work_ops(1, 3);
  const int stage = rank / kPerStage;
  std::vector<OpIndex> before_tp;
  if (stage > 0) before_tp.push_back(graph.add(recv(rank - kPerStage, 1, 7)));
  double allocated = 0;
  for (int i = 0, n = work_ops(rng); i < n; ++i) {
    const double d = duration_us(rng);
    Op op = compute(us(d), 0, us(1.3 * d));
    op.alloc_bytes = 1000.0 * (i + 1);
    allocated += op.alloc_bytes;
    before_tp.push_back(graph.add(op));
  }
  const OpIndex tp = graph.add(collective(tp_group(rank), 1, static_cast<std::uint32_t>(step)),
                               std::span<const OpIndex>(before_tp));
  Op after = compute(us(duration_us(rng)), 0);
  after.free_bytes = allocated;  // the step's activations, released once it is done
  const OpIndex done = graph.add(after, {tp});
  if (stage + 1 < kStages) graph.add(send(rank + kPerStage, 2, 7), {done});
  if (step % 25 == 24) graph.add(collective(dp_group(rank), 2, 1000), {done});
}

Cluster make_cluster(std::uint64_t seed) {
  Cluster cluster;
  cluster.groups = make_groups();
  cluster.graphs.resize(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    // Ranks of one TP group draw the same work count so their programs have the same shape.
    std::mt19937_64 rng(seed * 1000 + static_cast<std::uint64_t>(tp_group(r)));
    for (int step = 0; step < kSteps; ++step) add_step(cluster.graphs[r], r, step, rng);
  }
  return cluster;
}

ReplayResult replay(const Cluster& cluster) {
  Engine engine;
  FixedDelayComm comm(engine, us(15), us(8));
  Replay replay(engine, cluster.graphs, cluster.groups, comm);
  return replay.run();
}

}  // namespace

TEST_CASE("a seeded 64-rank pipeline replay finishes and respects every ordering rule",
          "[graph][replay][scale]") {
  const Cluster cluster = make_cluster(7);
  std::size_t op_count = 0;
  for (const auto& g : cluster.graphs) op_count += g.size();
  REQUIRE(op_count > 64 * 2000);
  const ReplayResult result = replay(cluster);
  Time latest = Time::zero();
  for (int r = 0; r < kRanks; ++r) {
    const OpGraph& graph = cluster.graphs[r];
    const auto& ops = result.ranks[r].ops;
    std::vector<Time> stream_free(static_cast<std::size_t>(graph.stream_count()));
    for (OpIndex i = 0; i < graph.size(); ++i) {
      const OpRecord& op = ops[i];
      const Time ready = result.ranks[r].ready(graph, i);
      REQUIRE(ready <= op.start);
      REQUIRE(op.start <= op.end);
      for (const OpIndex before : graph.dependencies(i)) REQUIRE(ops[before].end <= ready);
      // In-order streams: ready no earlier than the previous op of the stream ended.
      REQUIRE(stream_free[graph.op(i).stream] <= ready);
      stream_free[graph.op(i).stream] = op.end;
      latest = max(latest, op.end);
    }
    CHECK(result.ranks[r].peak_bytes > 0);
  }
  CHECK(result.end == latest);
  // The replay's own checks agree: every op ran once, each TP instance with its 4 members.
  const ReplayInvariants& inv = result.invariants;
  CHECK(inv.ok());
  CHECK(inv.ops_started == op_count);
  CHECK(inv.ops_ended == op_count);
  // 16 TP groups x kSteps instances of 4 members; 16 DP groups x kSteps/25 instances of 4.
  CHECK(inv.collectives_completed == 16 * kSteps + 16 * (kSteps / 25));
  CHECK(inv.collective_member_ends == 4 * inv.collectives_completed);
  // Stages 0..2 send every step to the next: 48 ranks x kSteps.
  CHECK(inv.transfers_completed == 48 * kSteps);
}

TEST_CASE("replaying the same graphs twice gives identical records", "[graph][replay][scale]") {
  const Cluster cluster = make_cluster(11);
  const ReplayResult first = replay(cluster);
  const ReplayResult second = replay(cluster);
  REQUIRE(first.end == second.end);
  for (int r = 0; r < kRanks; ++r) {
    const auto& a = first.ranks[r];
    const auto& b = second.ranks[r];
    REQUIRE(a.ops.size() == b.ops.size());
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
      REQUIRE(a.ready(cluster.graphs[r], i) == b.ready(cluster.graphs[r], i));
      REQUIRE(a.ops[i].start == b.ops[i].start);
      REQUIRE(a.ops[i].end == b.ops[i].end);
    }
    REQUIRE(a.memory.size() == b.memory.size());
    for (std::size_t i = 0; i < a.memory.size(); ++i) {
      REQUIRE(a.memory[i].at == b.memory[i].at);
      REQUIRE(a.memory[i].bytes == b.memory[i].bytes);
    }
    REQUIRE(a.peak_bytes == b.peak_bytes);
  }
}
