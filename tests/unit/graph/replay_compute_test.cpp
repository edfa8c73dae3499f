// Replay of compute ops: stream order, cross-stream dependencies, SM contention, memory.
#include <catch2/catch.hpp>

#include <vector>

#include "fake_comm.hpp"
#include "sim/graph/replay.hpp"

using namespace wallsim;
using namespace wallsim::test;

namespace {

ReplayResult replay(std::vector<OpGraph>& graphs, std::vector<std::vector<RankIndex>> groups = {},
                    Time collective_time = us(10)) {
  Engine engine;
  FixedDelayComm comm(engine, collective_time, us(1));
  Replay replay(engine, graphs, groups, comm);
  return replay.run();
}

}  // namespace

TEST_CASE("two compute ops on one stream run back to back", "[graph][replay]") {
  std::vector<OpGraph> graphs(1);
  graphs[0].add(compute(us(3)));
  graphs[0].add(compute(us(5)));
  const auto result = replay(graphs);
  const auto& ops = result.ranks[0].ops;
  CHECK(ops[0].start == us(0));
  CHECK(ops[0].end == us(3));
  // The second op is ready only when the first, ahead of it on the stream, has ended.
  CHECK(result.ranks[0].ready(graphs[0], 1) == us(3));
  CHECK(ops[1].start == us(3));
  CHECK(ops[1].end == us(8));
  CHECK(result.end == us(8));
}

TEST_CASE("compute ops on two streams overlap", "[graph][replay]") {
  std::vector<OpGraph> graphs(1);
  graphs[0].add(compute(us(3), 0));
  graphs[0].add(compute(us(5), 1));
  const auto result = replay(graphs);
  CHECK(result.ranks[0].ops[1].start == us(0));
  CHECK(result.end == us(5));  // max(3, 5), not 3 + 5
}

TEST_CASE("a dependency across streams delays the dependent until its dependency ends",
          "[graph][replay]") {
  std::vector<OpGraph> graphs(1);
  const OpIndex a = graphs[0].add(compute(us(4), 0));
  const OpIndex b = graphs[0].add(compute(us(2), 1), {a});
  graphs[0].add(compute(us(1), 1));  // behind b on stream 1
  const auto result = replay(graphs);
  const auto& ops = result.ranks[0].ops;
  CHECK(result.ranks[0].ready(graphs[0], b) == us(4));
  CHECK(ops[b].end == us(6));
  CHECK(ops[2].start == us(6));
}

TEST_CASE("an empty replay ends at zero", "[graph][replay]") {
  std::vector<OpGraph> graphs(2);
  const auto result = replay(graphs);
  CHECK(result.end == Time::zero());
  CHECK(result.ranks.size() == 2);
}

TEST_CASE("compute beside an SM-occupying collective takes its contended duration",
          "[graph][replay][contention]") {
  // One-rank group: the collective starts at 0 and, with the fake service, ends at 10 us.
  std::vector<OpGraph> graphs(1);
  graphs[0].add(collective(0, 1));
  const OpIndex during = graphs[0].add(compute(us(4), 0, us(6)));
  const OpIndex after = graphs[0].add(compute(us(4), 0, us(6)), {0});
  const auto result = replay(graphs, {{0}});
  const auto& ops = result.ranks[0].ops;
  CHECK(ops[during].end == us(6));  // started at 0 with the collective running
  // Started at 10, when the collective had just ended: full speed again.
  CHECK(ops[after].start == us(10));
  CHECK(ops[after].end == us(14));
}

TEST_CASE("a collective waiting for its peers already slows compute on its rank",
          "[graph][replay][contention]") {
  // Rank 1 reaches the collective only at 5 us; rank 0's kernel spins on its SMs from 0.
  std::vector<OpGraph> graphs(2);
  graphs[0].add(collective(0, 1));
  graphs[0].add(compute(us(2), 0, us(3)));
  graphs[1].add(compute(us(5), 0));
  graphs[1].add(collective(0, 1), {0});
  const auto result = replay(graphs, {{0, 1}});
  const auto& ops = result.ranks[0].ops;
  CHECK(result.ranks[0].ready(graphs[0], 0) == us(0));
  CHECK(ops[0].start == us(5));
  CHECK(ops[1].end == us(3));
}

TEST_CASE("a copy-engine collective does not slow compute", "[graph][replay][contention]") {
  std::vector<OpGraph> graphs(1);
  Op copy = collective(0, 1);
  copy.occupies_sms = false;
  graphs[0].add(copy);
  graphs[0].add(compute(us(4), 0, us(6)));
  CHECK(replay(graphs, {{0}}).ranks[0].ops[1].end == us(4));
}

TEST_CASE("an unset contended duration never makes compute faster", "[graph][replay][contention]") {
  std::vector<OpGraph> graphs(1);
  graphs[0].add(collective(0, 1));
  graphs[0].add(compute(us(4), 0));  // duration_contended left at zero
  CHECK(replay(graphs, {{0}}).ranks[0].ops[1].end == us(4));
}

TEST_CASE("memory starts at the static bytes and moves by each op's allocs and frees",
          "[graph][replay][memory]") {
  std::vector<OpGraph> graphs(1);
  graphs[0].static_bytes = 100;
  Op a = compute(us(2), 0);  // 0..2 us
  a.alloc_bytes = 50;
  Op b = compute(us(3), 1);  // 0..3 us
  b.alloc_bytes = 30;
  b.free_bytes = 80;         // frees its own 30 and a's 50
  Op c = compute(us(1), 0);  // 2..3 us, allocates nothing: no sample
  graphs[0].add(a);
  graphs[0].add(b);
  graphs[0].add(c);
  const auto result = replay(graphs);
  const auto& trace = result.ranks[0];
  // t=0: 100 static, then +50 and +30 at the same instant merge into one sample of 180.
  // t=3: -80 -> 100.
  REQUIRE(trace.memory.size() == 2);
  CHECK(trace.memory[0].at == us(0));
  CHECK(trace.memory[0].bytes == 180);
  CHECK(trace.memory[1].at == us(3));
  CHECK(trace.memory[1].bytes == 100);
  CHECK(trace.peak_bytes == 180);
}

TEST_CASE("memory samples are in time order and the peak is their maximum",
          "[graph][replay][memory]") {
  std::vector<OpGraph> graphs(1);
  graphs[0].static_bytes = 10;
  // Stream 0: three ops of 1 us, each allocating 5 and freeing 2 (net +3 each); the last also
  // frees the 9 still held, so the step ends at its static bytes.
  for (int i = 0; i < 3; ++i) {
    Op op = compute(us(1));
    op.alloc_bytes = 5;
    op.free_bytes = i == 2 ? 11 : 2;
    graphs[0].add(op);
  }
  const auto result = replay(graphs);
  const auto& trace = result.ranks[0];
  // t=0: 10+5=15; t=1: -2+5 -> 18; t=2: -2+5 -> 21; t=3: -11 -> 10.
  const std::vector<double> expected{15, 18, 21, 10};
  REQUIRE(trace.memory.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(trace.memory[i].at == us(static_cast<double>(i)));
    CHECK(trace.memory[i].bytes == expected[i]);
  }
  CHECK(trace.peak_bytes == 21);
}

TEST_CASE("a replay runs once", "[graph][replay]") {
  Engine engine;
  FixedDelayComm comm(engine, us(1), us(1));
  std::vector<OpGraph> graphs(1);
  graphs[0].add(compute(us(1)));
  Replay replay(engine, graphs, {}, comm);
  replay.run();
  CHECK_THROWS_AS(replay.run(), std::logic_error);
}

namespace {

// A straggler: rank 1's GPU runs every compute op 1.5 times as long; the others run the op's
// own durations.
class SlowRank final : public ComputeService {
 public:
  Time duration(RankIndex rank, OpIndex index, const Op& op, bool contended) override {
    asked.push_back({rank, index, contended});
    const Time own = OpDurations().duration(rank, index, op, contended);
    return rank == 1 ? Time::from_ps(own.ps() * 3 / 2) : own;
  }
  struct Question {
    RankIndex rank;
    OpIndex index;
    bool contended;
  };
  std::vector<Question> asked;
};

}  // namespace

TEST_CASE("a compute service times compute ops per rank, a slow rank holds up a collective",
          "[graph][replay]") {
  // Two ranks each run 4 µs of compute, then (depending on it) an all-reduce on group 0 (10 µs
  // in FixedDelayComm), then (depending on that) 2 µs. Rank 1 is slowed 1.5×: its compute takes 6
  // µs, so the collective starts at 6 µs on both ranks (rank 0 waits 2 µs), ends at 16 µs; rank 1's
  // last op ends at 16 + 3 = 19 µs, rank 0's at 18 µs. Each compute op is asked for once,
  // uncontended (no SM-holding kernel runs during compute here: the collective has ended before the
  // last op starts).
  std::vector<OpGraph> graphs(2);
  for (auto& graph : graphs) {
    const OpIndex first = graph.add(compute(us(4)));
    const OpIndex reduce = graph.add(collective(0), {first});
    graph.add(compute(us(2)), {reduce});
  }
  Engine engine;
  FixedDelayComm comm(engine, us(10), us(1));
  SlowRank slow;
  Replay replay(engine, graphs, {{0, 1}}, comm, InvariantPolicy::kThrow, &slow);
  const ReplayResult result = replay.run();
  CHECK(result.ranks[0].ops[1].start == us(6));
  CHECK(result.ranks[1].ops[1].start == us(6));
  CHECK(result.ranks[0].ops[2].end == us(18));
  CHECK(result.ranks[1].ops[2].end == us(19));
  CHECK(result.end == us(19));
  REQUIRE(slow.asked.size() == 4);
  for (const auto& question : slow.asked) CHECK_FALSE(question.contended);
}
