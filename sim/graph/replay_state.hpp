// Private to sim/graph: the bookkeeping behind Replay, shared by the scheduler (replay.cpp) and
// the stuck-replay diagnostics (replay_diagnostics.cpp). Nothing outside this folder includes it.
//
// Every table is indexed by a dense integer (rank, op, stream, group, channel, ordinal), so each
// op event does O(1) work: remaining-dependency counters, per-stream cursors, per-(rank, group)
// collective counters, and per-group / per-channel queues of pending instances by ordinal.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/engine.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/graph/replay.hpp"
#include "sim/graph/replay_invariants.hpp"

namespace wallsim::replay_detail {

// Waiting: not yet issued (not head of its stream, or dependencies pending, or the host has
// not reached it). Issued: ready; a communication op is waiting for its peers.
// Started: running. Ended: done. AwaitingHost: otherwise ready, and an event is scheduled for
// the time the host finishes issuing it.
enum class Phase : std::uint8_t { kWaiting, kIssued, kStarted, kEnded, kAwaitingHost };

struct Member {
  RankIndex rank = 0;
  OpIndex op = 0;
};

// One instance (by ordinal) of a collective on a group, while members arrive.
struct PendingCollective {
  std::uint32_t payload = 0;
  std::vector<Member> arrived;  // in arrival order
};

// Instances start in ordinal order (a member's ordinals follow its program order): a complete
// instance waits for those before it. Hence a deque whose front is `first_ordinal`.
struct GroupState {
  std::vector<RankIndex> members;  // sorted
  std::uint32_t first_ordinal = 0;
  std::deque<PendingCollective> pending;
};

struct PendingTransfer {
  std::optional<OpIndex> send;
  std::optional<OpIndex> recv;
};

// Transfers src -> dst; the k-th send matches the k-th receive (same ordering argument).
struct Channel {
  RankIndex src = 0;
  RankIndex dst = 0;
  std::uint32_t sends_issued = 0;
  std::uint32_t recvs_issued = 0;
  std::uint32_t first_ordinal = 0;
  std::deque<PendingTransfer> pending;
};

// Per-rank state is what a 1,024-rank full-fidelity step holds 32 M of, so per op it is one
// 32-bit word (dependencies left and phase) next to the op's record; what only communication
// ops need is indexed by OpGraph::comm_position.
struct RankState {
  const OpGraph* graph = nullptr;
  OpGraph::DependentIndex dependents;                // the graph's, read per op
  std::span<const std::uint32_t> comm_position;      // the graph's, read per communication op
  std::vector<std::span<const OpIndex>> stream_ops;  // program order per stream (the graph's)
  std::vector<std::uint32_t> cursor;  // per stream: position of its first unfinished op
  // Per op: dependencies not yet ended (low kPhaseShift bits) and the Phase (the bits above).
  std::vector<std::uint32_t, ArenaAllocator<std::uint32_t>> op_state;
  // Per communication op: its collective slot or channel index, and its k on that group or
  // channel (side by side: arrival reads both).
  struct CommSlot {
    std::uint32_t link = 0;
    std::uint32_t ordinal = 0;
  };
  std::vector<CommSlot, ArenaAllocator<CommSlot>> comm;
  std::vector<std::uint32_t> collectives_ended;  // per collective slot
  std::vector<GroupIndex> slot_group;            // collective slot -> its group
  std::uint32_t sm_comm_running = 0;  // communication ops holding SMs, from arrival to end
  // The host issues ops in program order: op i is issued at
  // host_base + (host_issued[i] - host_base_issued) unless a synchronising op before it has not
  // ended (host_syncs[sync_cursor] < i), in which case the host has not reached it yet.
  std::span<const Time> host_issued;    // the graph's
  std::span<const OpIndex> host_syncs;  // the graph's
  std::uint32_t sync_cursor = 0;        // first synchronising op not yet ended
  Time host_base;                       // when the host resumed after the last ended sync
  Time host_base_issued;                // host_issued at that sync (zero before any)
  double memory_in_use = 0;
  std::size_t ops_ended = 0;
  RankTrace trace;

  static constexpr std::uint32_t kPhaseShift = 29;
  static constexpr std::uint32_t kDepsMask = (1u << kPhaseShift) - 1;
  Phase phase(OpIndex op) const { return static_cast<Phase>(op_state[op] >> kPhaseShift); }
  void set_phase(OpIndex op, Phase phase) {
    op_state[op] = (op_state[op] & kDepsMask) | (std::uint32_t(phase) << kPhaseShift);
  }
  std::uint32_t remaining_deps(OpIndex op) const { return op_state[op] & kDepsMask; }
  // One dependency of `op` ended; returns how many are left.
  std::uint32_t dependency_ended(OpIndex op) { return --op_state[op] & kDepsMask; }
  bool host_blocked_before(OpIndex op) const {
    return sync_cursor < host_syncs.size() && op > host_syncs[sync_cursor];
  }
  Time host_issue_time(OpIndex op) const {
    return host_base + (host_issued[op] - host_base_issued);
  }
  std::uint32_t& link(OpIndex op) { return comm[comm_position[op]].link; }
  std::uint32_t link(OpIndex op) const { return comm[comm_position[op]].link; }
  std::uint32_t& ordinal(OpIndex op) { return comm[comm_position[op]].ordinal; }
  std::uint32_t ordinal(OpIndex op) const { return comm[comm_position[op]].ordinal; }
  std::span<const OpIndex> dependents_of(OpIndex op) const {
    return dependents.dependents.subspan(dependents.begin[op],
                                         dependents.begin[op + 1] - dependents.begin[op]);
  }
};

struct State {
  State(Engine& engine_in, CommService& comm_in, InvariantPolicy policy_in,
        ComputeService* compute_in)
      : engine(engine_in),
        comm(comm_in),
        compute(compute_in ? *compute_in : own_durations),
        policy(policy_in) {}

  Engine& engine;
  CommService& comm;
  OpDurations own_durations;
  ComputeService& compute;
  InvariantPolicy policy;
  ReplayInvariants invariants;
  Time last_seen = Time::zero();  // engine time at the previous replay callback
  std::vector<RankState> ranks;
  std::vector<GroupState> groups;
  std::vector<Channel> channels;
  std::size_t ops_total = 0;
  std::size_t ops_ended = 0;
  Time end = Time::zero();
  bool ran = false;
};

// ---- invariants (replay_invariants.cpp) ----

// Counts a violation in `counter` and keeps its line while fewer than kMaxListed are kept.
void note_violation(ReplayInvariants& invariants, std::uint64_t& counter, std::string line);
// The checks below run per op: the passing case is inline, the report of a failure is not.
void note_time_regression(State& state, Time now);
void note_op_times(State& state, RankIndex rank, OpIndex index, Time ready);

// Engine time at this callback against the previous one.
inline void check_time(State& state) {
  const Time now = state.engine.now();
  if (now < state.last_seen) note_time_regression(state, now);
  state.last_seen = now;
}

// An op's record once it ended: ready <= start <= end (a compute op is ready when it starts).
inline void check_op_times(State& state, RankIndex rank, OpIndex index, const Op& op) {
  const RankState& rs = state.ranks[rank];
  const OpRecord& record = rs.trace.ops[index];
  const Time ready = rs.trace.ready(index, op.kind, rs.comm_position[index]);
  if (ready <= record.start && record.start <= record.end) return;
  note_op_times(state, rank, index, ready);
}
// A change of a rank's bytes in use left them below its static bytes.
void check_memory_floor(State& state, RankIndex rank);
// After the engine drained with every op ended: collectives per member, unmatched transfers,
// memory back to static.
void check_end_of_step(State& state);

// An op as reports name it: 'label', or #index when it has no interned label.
std::string op_name(const OpGraph& graph, OpIndex index);

// "rank 3 stream 1 op 'x' (collective on group 2 #0) waits for ranks 5, 7" lines, one per
// blocked stream head, for up to `max_ranks` stuck ranks.
std::string describe_stuck(const State& state, std::size_t max_ranks);

}  // namespace wallsim::replay_detail
