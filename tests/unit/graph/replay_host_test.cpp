// Replay with a host: ops are issued in program order at a host cost each, and a synchronising
// op holds the host until it ends.
#include <catch2/catch.hpp>

#include <vector>

#include "fake_comm.hpp"
#include "sim/graph/replay.hpp"

using namespace wallsim;
using namespace wallsim::test;

namespace {

ReplayResult replay(std::vector<OpGraph>& graphs, std::vector<std::vector<RankIndex>> groups = {}) {
  Engine engine;
  FixedDelayComm comm(engine, us(10), us(1));
  Replay replay(engine, graphs, groups, comm);
  return replay.run();
}

Op hosted(Time duration, Time host_cost, StreamIndex stream = 0) {
  Op op = compute(duration, stream);
  op.host_cost = host_cost;
  return op;
}

}  // namespace

TEST_CASE("kernels shorter than their launch run at the host's rate", "[graph][replay][host]") {
  // 10 kernels of 2 us, each costing the host 5 us to issue: kernel i is issued at 5(i+1) us
  // and the GPU is always ahead, so the last starts at 50 us and ends at 52 us, not at 20 us.
  std::vector<OpGraph> graphs(1);
  for (int i = 0; i < 10; ++i) graphs[0].add(hosted(us(2), us(5)));
  const auto result = replay(graphs);
  for (OpIndex i = 0; i < 10; ++i) CHECK(result.ranks[0].ops[i].start == us(5.0 * (i + 1)));
  CHECK(result.end == us(52));
}

TEST_CASE("kernels longer than their launch hide the host behind the GPU",
          "[graph][replay][host]") {
  // Kernels of 8 us issued every 5 us: only the first launch is exposed, 5 + 10 * 8 = 85 us.
  std::vector<OpGraph> graphs(1);
  for (int i = 0; i < 10; ++i) graphs[0].add(hosted(us(8), us(5)));
  const auto result = replay(graphs);
  CHECK(result.ranks[0].ops[0].start == us(5));
  CHECK(result.end == us(85));
}

TEST_CASE("a synchronising op holds the host until it ends", "[graph][replay][host]") {
  // Op 0 (issued at 1 us, runs 20 us) synchronises: the host resumes at 21 us and issues op 1
  // after its own cost, at 24 us, although the stream was free at 21 us. Op 2, on another
  // stream and independent, also waits for the host: issued at 24 + 3 = 27 us.
  std::vector<OpGraph> graphs(1);
  Op sync = hosted(us(20), us(1));
  sync.host_sync = true;
  graphs[0].add(sync);
  graphs[0].add(hosted(us(2), us(3)));
  graphs[0].add(hosted(us(2), us(3), 1));
  const auto result = replay(graphs);
  const auto& ops = result.ranks[0].ops;
  CHECK(ops[0].start == us(1));
  CHECK(ops[0].end == us(21));
  CHECK(ops[1].start == us(24));
  CHECK(ops[2].start == us(27));
  CHECK(result.end == us(29));
}

TEST_CASE("without a sync the host runs ahead of the GPU", "[graph][replay][host]") {
  // The same three ops without the sync: op 1 is issued at 4 us but waits for the stream
  // (op 0 ends at 21 us); op 2 on the other stream starts when issued, at 7 us.
  std::vector<OpGraph> graphs(1);
  graphs[0].add(hosted(us(20), us(1)));
  graphs[0].add(hosted(us(2), us(3)));
  graphs[0].add(hosted(us(2), us(3), 1));
  const auto result = replay(graphs);
  const auto& ops = result.ranks[0].ops;
  CHECK(ops[1].start == us(21));
  CHECK(ops[2].start == us(7));
}

TEST_CASE("a collective waits for the host of its slowest member", "[graph][replay][host]") {
  // Rank 1's host spends 30 us before reaching the collective; rank 0's 1 us. The collective
  // starts when both have issued it, at 30 us, and the fake service ends it 10 us later.
  std::vector<OpGraph> graphs(2);
  Op fast = collective(0);
  fast.host_cost = us(1);
  Op slow = collective(0);
  slow.host_cost = us(30);
  graphs[0].add(fast);
  graphs[1].add(slow);
  const auto result = replay(graphs, {{0, 1}});
  CHECK(result.ranks[0].ready(graphs[0], 0) == us(1));
  CHECK(result.ranks[0].ops[0].start == us(30));
  CHECK(result.end == us(40));
}
