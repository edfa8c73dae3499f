// The replay's self-checks (sim/graph/replay_invariants.hpp): a valid step passes and counts what
// ran; each broken rule is reported (kRecord) or thrown (kThrow, the default).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fake_comm.hpp"
#include "sim/graph/replay.hpp"

using namespace wallsim;
using namespace wallsim::test;
using Catch::Matchers::Contains;

namespace {

ReplayResult record(const std::vector<OpGraph>& graphs,
                    const std::vector<std::vector<RankIndex>>& groups = {}) {
  Engine engine;
  FixedDelayComm comm(engine, us(10), us(7));
  Replay replay(engine, graphs, groups, comm, InvariantPolicy::kRecord);
  return replay.run();
}

std::string thrown(const std::vector<OpGraph>& graphs,
                   const std::vector<std::vector<RankIndex>>& groups = {}) {
  Engine engine;
  FixedDelayComm comm(engine, us(10), us(7));
  Replay replay(engine, graphs, groups, comm);
  try {
    replay.run();
  } catch (const ReplayInvariantError& e) {
    return e.what();
  }
  return "";
}

Op with_memory(Op op, double alloc_bytes, double free_bytes) {
  op.alloc_bytes = alloc_bytes;
  op.free_bytes = free_bytes;
  return op;
}

// Two ranks: each computes (allocating 40, freeing it later), joins two all-reduces on group
// 0 = {0, 1}, and rank 0 sends one payload to rank 1; every byte allocated is freed.
std::vector<OpGraph> valid_step() {
  std::vector<OpGraph> graphs(2);
  for (RankIndex r = 0; r < 2; ++r) {
    OpGraph& g = graphs[static_cast<std::size_t>(r)];
    g.static_bytes = 1000;
    const OpIndex fwd = g.add(with_memory(compute(us(5)), 40, 0));
    const OpIndex ar = g.add(collective(0, 1, 3), {fwd});
    const OpIndex bwd = g.add(with_memory(compute(us(5)), 0, 40), {ar});
    g.add(collective(0, 1, 4), {bwd});
  }
  graphs[0].add(send(1, 2, 5));
  graphs[1].add(recv(0, 2, 5));
  return graphs;
}

}  // namespace

TEST_CASE("a valid step passes every invariant and counts what ran", "[graph][replay][invariant]") {
  const ReplayResult result = record(valid_step(), {{0, 1}});
  const ReplayInvariants& inv = result.invariants;
  CHECK(inv.ok());
  CHECK(inv.violations.empty());
  // 4 ops on each rank plus the send and the receive: 10 ops, each started and ended once.
  CHECK(inv.ops_started == 10);
  CHECK(inv.ops_ended == 10);
  // Two instances on group 0, each ended by both members.
  CHECK(inv.collectives_completed == 2);
  CHECK(inv.collective_member_ends == 4);
  CHECK(inv.transfers_completed == 1);
  // Events: 2 ranks x 2 compute ends + 2 collective ends + 1 transfer end = 7.
  CHECK(inv.events == 7);
  CHECK(result.ranks[0].memory.back().bytes == 1000);
}

TEST_CASE("a free larger than what was allocated before it is reported",
          "[graph][replay][invariant][memory]") {
  // Static 100; an op allocates 50 and, when it ends, frees 80: 70 bytes in use, below the
  // static 100 the step holds throughout.
  std::vector<OpGraph> graphs(1);
  graphs[0].static_bytes = 100;
  graphs[0].add(with_memory(compute(us(2)), 50, 80));
  const ReplayResult result = record(graphs);
  const ReplayInvariants& inv = result.invariants;
  CHECK(inv.memory_below_static == 1);
  CHECK(inv.memory_not_returned == 1);  // and it ends at 70, not at 100
  CHECK_FALSE(inv.ok());
  REQUIRE(inv.violations.size() == 2);
  CHECK_THAT(inv.violations[0], Contains("rank 0 holds 70 bytes") &&
                                    Contains("below its static 100: an op freed more than"));
  CHECK_THAT(inv.violations[1], Contains("ends the step holding 70 bytes, not its static 100"));
  CHECK_THAT(thrown(graphs), Contains("replay invariants violated (2)"));
}

TEST_CASE("memory still held when the step ends is reported",
          "[graph][replay][invariant][memory]") {
  std::vector<OpGraph> graphs(2);
  graphs[1].static_bytes = 8;
  graphs[1].add(with_memory(compute(us(1)), 24, 0));
  graphs[1].add(with_memory(compute(us(1)), 0, 16));  // 8 of the 24 are never freed
  const ReplayInvariants inv = record(graphs).invariants;
  CHECK(inv.memory_below_static == 0);
  CHECK(inv.memory_not_returned == 1);
  REQUIRE(inv.violations.size() == 1);
  CHECK_THAT(inv.violations[0], Contains("rank 1 ends the step holding 16 bytes, not its static "
                                         "8 (allocations and frees differ by 8)"));
}

TEST_CASE("rounding in sums of allocations and frees is not a violation",
          "[graph][replay][invariant][memory]") {
  // 0.1 + 0.2 != 0.3 in binary floating point: the step ends 5.6e-17 bytes off its static
  // bytes, far inside the relative 1e-9 tolerance.
  std::vector<OpGraph> graphs(1);
  graphs[0].add(with_memory(compute(us(1)), 0.1, 0));
  graphs[0].add(with_memory(compute(us(1)), 0.2, 0));
  graphs[0].add(with_memory(compute(us(1)), 0, 0.3));
  const ReplayResult result = record(graphs);
  REQUIRE(result.ranks[0].memory.back().bytes != 0.0);  // the rounding is really there
  CHECK(result.invariants.ok());
}

TEST_CASE("a send and a receive that name different payloads are reported",
          "[graph][replay][invariant][p2p]") {
  // The sender moves payload 3 (say 1 MiB); the receiver posted a buffer for payload 4.
  std::vector<OpGraph> graphs(2);
  Op out = send(1, 1, 3);
  out.label = graphs[0].intern_label("pp_send");
  graphs[0].add(out);
  Op in = recv(0, 1, 4);
  in.label = graphs[1].intern_label("pp_recv");
  graphs[1].add(in);
  const ReplayInvariants inv = record(graphs).invariants;
  CHECK(inv.transfer_payload_mismatches == 1);
  CHECK(inv.transfers_completed == 1);  // the transfer still ran, with the sender's payload
  REQUIRE(inv.violations.size() == 1);
  CHECK_THAT(inv.violations[0], Contains("rank 0 op 'pp_send' sends payload 3 to rank 1 op "
                                         "'pp_recv', which receives payload 4 (transfer #0)"));
  CHECK_THAT(thrown(graphs), Contains("sends payload 3"));
}

TEST_CASE("a CommService that calls done twice is reported as an op ending twice",
          "[graph][replay][invariant]") {
  struct TwiceComm : CommService {
    explicit TwiceComm(Engine& e) : engine(e) {}
    void start_collective(GroupIndex, std::uint32_t, Done done) override {
      engine.schedule_after(us(1), done);
      engine.schedule_after(us(2), done);
    }
    void start_transfer(RankIndex, RankIndex, std::uint32_t, Done done) override {
      engine.schedule_after(us(1), done);
    }
    Engine& engine;
  };
  std::vector<OpGraph> graphs(1);
  graphs[0].add(collective(0));
  {
    Engine engine;
    TwiceComm comm(engine);
    Replay replay(engine, graphs, {{0}}, comm, InvariantPolicy::kRecord);
    const ReplayInvariants inv = replay.run().invariants;
    CHECK(inv.ops_run_twice == 1);
    CHECK(inv.ops_ended == 1);
    REQUIRE(inv.violations.size() == 1);
    CHECK_THAT(inv.violations[0], Contains("ended while not running"));
  }
  Engine engine;
  TwiceComm comm(engine);
  Replay replay(engine, graphs, {{0}}, comm);
  CHECK_THROWS_AS(replay.run(), ReplayInvariantError);
}

TEST_CASE("ranks sharing one graph body each run every op once", "[graph][replay][invariant]") {
  // Four ranks run one body rebound to their own pair group ({0,1} or {2,3}) and peer.
  std::vector<std::vector<RankIndex>> groups{{0, 1}, {2, 3}};
  OpGraph body;
  body.add(compute(us(3)));
  body.add(collective(0, 1, 1), {0});
  body.add(with_memory(compute(us(1)), 10, 10), {1});
  std::vector<OpGraph> graphs;
  for (RankIndex r = 0; r < 4; ++r) graphs.push_back(body.rebound({{{0, r < 2 ? 0u : 1u}}, {}}));
  const ReplayInvariants inv = record(graphs, groups).invariants;
  CHECK(inv.ok());
  CHECK(inv.ops_started == 12);
  CHECK(inv.ops_ended == 12);
  CHECK(inv.collectives_completed == 2);
  CHECK(inv.collective_member_ends == 4);
}

TEST_CASE("every op record is ordered ready <= start <= end and times never go back",
          "[graph][replay][invariant]") {
  const std::vector<OpGraph> graphs = valid_step();
  const ReplayResult result = record(graphs, {{0, 1}});
  CHECK(result.invariants.time_regressions == 0);
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    const RankTrace& rank = result.ranks[r];
    for (std::size_t i = 1; i < rank.memory.size(); ++i) {
      CHECK(rank.memory[i - 1].at <= rank.memory[i].at);
    }
    for (OpIndex i = 0; i < rank.ops.size(); ++i) {
      CHECK(rank.ready(graphs[r], i) <= rank.ops[i].start);
      CHECK(rank.ops[i].start <= rank.ops[i].end);
    }
  }
}
