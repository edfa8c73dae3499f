// Replay of communication: collectives matched by ordinal, send/recv pairing, and stuck
// replays that explain themselves instead of hanging.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "fake_comm.hpp"
#include "sim/graph/replay.hpp"

using namespace wallsim;
using namespace wallsim::test;
using Catch::Matchers::Contains;

namespace {

struct Run {
  Engine engine;
  FixedDelayComm comm{engine, us(10), us(7)};  // collectives 10 us, transfers 7 us
  ReplayResult result;

  Run(const std::vector<OpGraph>& graphs, const std::vector<std::vector<RankIndex>>& groups) {
    Replay replay(engine, graphs, groups, comm);
    result = replay.run();
  }
};

std::string stuck_message(const std::vector<OpGraph>& graphs,
                          const std::vector<std::vector<RankIndex>>& groups) {
  try {
    Run run(graphs, groups);
  } catch (const ReplayStuck& stuck) {
    return stuck.what();
  }
  return "replay did not get stuck";
}

}  // namespace

TEST_CASE("a collective starts when its last member arrives and ends when the service says",
          "[graph][replay][collective]") {
  // Ranks reach the collective after 2, 9 and 4 us of compute.
  std::vector<OpGraph> graphs(3);
  const double arrive_us[] = {2, 9, 4};
  for (int r = 0; r < 3; ++r) {
    const OpIndex work = graphs[r].add(compute(us(arrive_us[r])));
    graphs[r].add(collective(0, 1, 42), {work});
  }
  Run run(graphs, {{0, 1, 2}});
  REQUIRE(run.comm.calls.size() == 1);  // one call for the group, not one per member
  CHECK(run.comm.calls[0].payload == 42);
  CHECK(run.comm.calls[0].at == us(9));
  for (int r = 0; r < 3; ++r) {
    const OpRecord& op = run.result.ranks[r].ops[1];
    CHECK(run.result.ranks[r].ready(graphs[r], 1) == us(arrive_us[r]));
    CHECK(op.start == us(9));  // the last arrival
    CHECK(op.end == us(19));   // 9 + the fake's 10 us
  }
  CHECK(run.result.end == us(19));
}

TEST_CASE("collectives one rank feeds from two streams match in program order",
          "[graph][replay][collective]") {
  // Both ranks call an all-gather (payload 1, stream 1) and then a reduce-scatter (payload 2,
  // stream 2) on group 0, as FSDP does. Rank 0's all-gather waits 20 us of compute, so its
  // reduce-scatter reaches the group first; rank 1 reaches them in program order. NCCL matches
  // a communicator's calls by the order they were made: the reduce-scatters, complete from the
  // start, wait for the all-gathers before them to start (at 20 us), and both end at 30; rank
  // 0's reduce-scatter never meets rank 1's all-gather.
  std::vector<OpGraph> graphs(2);
  const OpIndex wait = graphs[0].add(compute(us(20)));
  graphs[0].add(collective(0, 1, 1), {wait});
  graphs[0].add(collective(0, 2, 2));
  graphs[1].add(collective(0, 1, 1));
  graphs[1].add(collective(0, 2, 2));
  Run run(graphs, {{0, 1}});
  REQUIRE(run.comm.calls.size() == 2);
  CHECK(run.comm.calls[0].payload == 1);
  CHECK(run.comm.calls[0].at == us(20));
  CHECK(run.comm.calls[1].payload == 2);
  CHECK(run.comm.calls[1].at == us(20));
  CHECK(run.result.ranks[0].ops[1].end == us(30));
  CHECK(run.result.ranks[0].ops[2].start == us(20));
  CHECK(run.result.ranks[1].ops[1].end == us(30));
  CHECK(run.result.end == us(30));
}

TEST_CASE("collectives on interleaved groups match by per-group ordinal",
          "[graph][replay][collective]") {
  // Group 0 = {0, 1}, group 1 = {1, 2}. Rank 1 issues g0#0, g1#0, g0#1 on one stream; rank 0
  // issues g0#0, g0#1; rank 2 issues g1#0 late (after 30 us). Rank 1's g0#1 therefore waits
  // for g1#0 (stream order) which ends at 40, so g0#1 starts at 40 and ends at 50; rank 0's
  // g0#1 matches it (not g1 traffic) and ends at 50 too.
  std::vector<OpGraph> graphs(3);
  graphs[0].add(collective(0, 1, 1));
  graphs[0].add(collective(0, 1, 2));
  graphs[1].add(collective(0, 1, 1));
  graphs[1].add(collective(1, 1, 7));
  graphs[1].add(collective(0, 1, 2));
  graphs[2].add(compute(us(30)));
  graphs[2].add(collective(1, 1, 7), {0});
  Run run(graphs, {{0, 1}, {1, 2}});
  const auto& r0 = run.result.ranks[0].ops;
  const auto& r1 = run.result.ranks[1].ops;
  CHECK(r0[0].end == us(10));
  CHECK(r1[1].start == us(30));
  CHECK(r1[1].end == us(40));
  CHECK(run.result.ranks[0].ready(graphs[0], 1) == us(10));
  CHECK(r0[1].start == us(40));
  CHECK(r0[1].end == us(50));
  CHECK(r1[2].end == us(50));
  REQUIRE(run.comm.calls.size() == 3);
  CHECK(run.comm.calls[1].group == 1);
  CHECK(run.comm.calls[2].group == 0);
  CHECK(run.comm.calls[2].payload == 2);
}

TEST_CASE("members that disagree on a collective's payload are a logic error",
          "[graph][replay][collective]") {
  std::vector<OpGraph> graphs(2);
  graphs[0].add(collective(0, 1, 1));
  graphs[1].add(collective(0, 1, 2));
  CHECK_THROWS_AS(Run(graphs, {{0, 1}}), std::logic_error);
}

TEST_CASE("a collective on a group the rank is not in is rejected at construction",
          "[graph][replay][collective]") {
  Engine engine;
  FixedDelayComm comm(engine, us(1), us(1));
  std::vector<OpGraph> graphs(2);
  graphs[0].add(collective(0));
  CHECK_THROWS_AS(Replay(engine, graphs, {{1}}, comm), std::invalid_argument);
  CHECK_THROWS_AS(Replay(engine, graphs, {}, comm), std::invalid_argument);
  CHECK_THROWS_AS(Replay(engine, graphs, {{0, 0}}, comm), std::invalid_argument);
}

TEST_CASE("a send and its receive start together when both are ready and end together",
          "[graph][replay][p2p]") {
  // Rank 0 sends after 5 us of compute; rank 1 posts its receive at 0.
  std::vector<OpGraph> graphs(2);
  const OpIndex work = graphs[0].add(compute(us(5)));
  graphs[0].add(send(1, 1, 9), {work});
  graphs[1].add(recv(0, 1, 9));
  Run run(graphs, {});
  REQUIRE(run.comm.calls.size() == 1);
  CHECK_FALSE(run.comm.calls[0].collective);
  CHECK(run.comm.calls[0].src == 0);
  CHECK(run.comm.calls[0].dst == 1);
  CHECK(run.comm.calls[0].payload == 9);
  const OpRecord& s = run.result.ranks[0].ops[1];
  const OpRecord& r = run.result.ranks[1].ops[0];
  CHECK(run.result.ranks[1].ready(graphs[1], 0) == us(0));  // posted before the send
  CHECK(s.start == us(5));
  CHECK(r.start == us(5));
  CHECK(s.end == us(12));  // 5 + the fake's 7 us
  CHECK(r.end == us(12));
}

TEST_CASE("the k-th send to a peer matches the peer's k-th receive from this rank",
          "[graph][replay][p2p]") {
  // Two sends 0->1 with payloads 1 and 2; rank 1 receives on two streams, the second receive
  // behind 20 us of compute. Transfers: #0 at 0..7, #1 when the second receive is posted (20).
  std::vector<OpGraph> graphs(2);
  graphs[0].add(send(1, 1, 1));
  graphs[0].add(send(1, 1, 2));
  graphs[1].add(recv(0, 1, 1));
  const OpIndex work = graphs[1].add(compute(us(20), 0));
  graphs[1].add(recv(0, 2, 2), {work});
  Run run(graphs, {});
  REQUIRE(run.comm.calls.size() == 2);
  CHECK(run.comm.calls[1].payload == 2);
  CHECK(run.comm.calls[1].at == us(20));
  CHECK(run.result.ranks[0].ops[1].end == us(27));
  CHECK(run.result.ranks[1].ops[2].end == us(27));
}

TEST_CASE("a collective with a member that never issues it is reported as stuck",
          "[graph][replay][stuck]") {
  std::vector<OpGraph> graphs(3);
  for (int r = 0; r < 2; ++r) {
    Op op = collective(0, 1);
    op.label = graphs[r].intern_label("tp_all_gather");
    graphs[r].add(op);
  }
  graphs[2].add(compute(us(1)));  // rank 2 is in the group but never joins
  const std::string message = stuck_message(graphs, {{0, 1, 2}});
  CHECK_THAT(message, Contains("rank 0 stream 1 op 'tp_all_gather' (collective on group 0 #0) "
                               "waits for ranks 2"));
  CHECK_THAT(message, Contains("rank 1 stream 1"));
  CHECK_THAT(message, !Contains("rank 2 stream"));  // rank 2 finished its program
}

TEST_CASE("a receive with no matching send is reported as stuck", "[graph][replay][stuck]") {
  std::vector<OpGraph> graphs(3);
  Op op = recv(2, 0);
  op.label = graphs[1].intern_label("pp_recv");
  graphs[1].add(op);
  Op after = compute(us(1), 1);
  after.label = graphs[1].intern_label("after_recv");
  graphs[1].add(after, {0});
  const std::string message = stuck_message(graphs, {});
  CHECK_THAT(message, Contains("rank 1 stream 0 op 'pp_recv' (recv from rank 2 #0) has no "
                               "matching send"));
  // The dependent on another stream names what it waits for.
  CHECK_THAT(message,
             Contains("rank 1 stream 1 op 'after_recv' waits for op 'pp_recv' on stream 0"));
}

TEST_CASE("a send with no matching receive is reported as stuck", "[graph][replay][stuck]") {
  std::vector<OpGraph> graphs(2);
  graphs[0].add(send(1));
  CHECK_THAT(stuck_message(graphs, {}), Contains("(send to rank 1 #0) has no matching recv"));
}

TEST_CASE("a service that never calls done leaves a stuck replay, not a hang",
          "[graph][replay][stuck]") {
  struct SilentComm : CommService {
    void start_collective(GroupIndex, std::uint32_t, Done) override {}
    void start_transfer(RankIndex, RankIndex, std::uint32_t, Done) override {}
  } silent;
  Engine engine;
  std::vector<OpGraph> graphs(1);
  graphs[0].add(collective(0));
  Replay replay(engine, graphs, {{0}}, silent);
  CHECK_THROWS_WITH(replay.run(), Contains("started but never ended"));
}

TEST_CASE("a stuck report names at most ten ranks and counts the rest", "[graph][replay][stuck]") {
  // 12 ranks, each waiting for a send from the next rank that nobody posts.
  std::vector<OpGraph> graphs(12);
  for (int r = 0; r < 12; ++r) graphs[r].add(recv((r + 1) % 12, 0));
  const std::string message = stuck_message(graphs, {});
  CHECK_THAT(message, Contains("12 of 12 ops never ended, on 12 rank(s)"));
  CHECK_THAT(message, Contains("rank 9 stream 0"));
  CHECK_THAT(message, !Contains("rank 10 stream 0"));
  CHECK_THAT(message, Contains("and 2 more ranks"));
}

TEST_CASE("sends and receives pair only within their tag", "[graph][replay]") {
  // Rank 1 sends tag 1 then tag 0; rank 0 receives tag 0 then tag 1. Matching by order alone
  // would pair the tag-1 send with the tag-0 receive.
  std::vector<OpGraph> graphs(2);
  Op send1;
  send1.kind = OpKind::kSend;
  send1.peer = 0;
  send1.tag = 1;
  send1.stream = 1;
  Op send0 = send1;
  send0.tag = 0;
  send0.stream = 2;
  graphs[1].add(send1);
  Op delay;
  delay.duration = Time::from_us(5);
  delay.duration_contended = delay.duration;
  const OpIndex wait = graphs[1].add(delay);
  graphs[1].add(send0, {wait});
  Op recv0;
  recv0.kind = OpKind::kRecv;
  recv0.peer = 1;
  recv0.tag = 0;
  recv0.stream = 1;
  Op recv1 = recv0;
  recv1.tag = 1;
  recv1.stream = 2;
  graphs[0].add(recv0);
  graphs[0].add(recv1);
  Engine engine;
  FixedDelayComm comm(engine, Time::from_us(1), Time::from_us(1));
  const std::vector<std::vector<RankIndex>> no_groups;
  Replay replay(engine, graphs, no_groups, comm);
  const ReplayResult result = replay.run();
  // The tag-0 pair starts when rank 1's tag-0 send is issued, after its 5 µs compute.
  CHECK(result.ranks[0].ops[0].start == Time::from_us(5));
  CHECK(result.ranks[0].ops[1].start == Time::zero());
}
