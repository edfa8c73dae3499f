// Replaying every simulated rank's OpGraph on the engine.
//
// Each rank's streams issue their ops in order; compute ops run for the duration the
// ComputeService gives (by default the op's own: the contended one when a communication kernel
// that occupies SMs is running on the same rank at the op's start); a collective starts once every
// rank of its group has reached it (the k-th collective a rank issues on a group matches the k-th
// of every other member) and ends when the CommService calls back; a send and a receive (the k-th
// send r->p with tag t matches the k-th receive on p from r with tag t, as MPI tags do) start the
// transfer once both are reached. Memory moves by each op's alloc/free bytes.
//
// While it runs the replay checks its own invariants (replay_invariants.hpp: time order, every
// op once, whole collectives, matched transfers with equal payloads, memory never below and
// back at the static bytes) and by default throws ReplayInvariantError if one fails.
//
// A replay that drains the engine with ops left unfinished throws ReplayStuck naming, per
// rank, the ops at the head of each blocked stream and what they wait for. It never hangs:
// every event is finite and ops only wait on events.
#pragma once

#include <functional>
#include <stdexcept>
#include <vector>

#include "sim/core/engine.hpp"
#include "sim/core/table_arena.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/graph/replay_invariants.hpp"

namespace wallsim {

class CommService {
 public:
  using Done = std::function<void()>;
  virtual ~CommService() = default;
  // Every member of `group` has reached a collective with this payload (members' payloads
  // agree); `done` must be called once when it has completed everywhere.
  virtual void start_collective(GroupIndex group, std::uint32_t payload, Done done) = 0;
  // Both sides of a transfer src -> dst are ready.
  virtual void start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload, Done done) = 0;
};

// How long a compute op runs. The replay asks as each compute op starts on `rank`, with
// `contended` true when a communication kernel holds SMs on that rank then. Ranks may differ
// (a straggler's GPU, jitter): the service sees which rank asks.
class ComputeService {
 public:
  virtual ~ComputeService() = default;
  virtual Time duration(RankIndex rank, OpIndex index, const Op& op, bool contended) = 0;
};

// The default: the durations the builder put on the op, `duration` alone and the larger of
// `duration` and `duration_contended` while contended (losing SMs never makes a kernel faster;
// this also covers builders that leave duration_contended unset).
class OpDurations final : public ComputeService {
 public:
  Time duration(RankIndex rank, OpIndex index, const Op& op, bool contended) override;
};

// When an op ran. It was ready (first unfinished op of its stream, its dependencies ended, the
// host past it) at RankTrace::ready: a compute op starts when it is ready, a communication op
// when every participant has arrived.
struct OpRecord {
  Time start;
  Time end;
};

// One record per op of a rank: a full-fidelity step holds tens of millions.
using OpRecords = std::vector<OpRecord, ArenaAllocator<OpRecord>>;

struct MemorySample {
  Time at;
  double bytes = 0;
};

struct RankTrace {
  OpRecords ops;  // indexed like the rank's OpGraph
  // When each communication op was ready, indexed by OpGraph::comm_position (a compute op's
  // ready time is its start, so a full-fidelity step does not store tens of millions of them).
  std::vector<Time, ArenaAllocator<Time>> comm_ready;
  std::vector<MemorySample> memory;  // bytes in use after each change, in time order
  double peak_bytes = 0;

  // When op `index` of `graph` (the graph this trace replayed) was ready.
  Time ready(const OpGraph& graph, OpIndex index) const {
    return ready(index, graph.shared_op(index).kind, graph.comm_position(index));
  }
  // The same for a caller that has the op's kind and communication position at hand.
  Time ready(OpIndex index, OpKind kind, std::uint32_t comm_position) const {
    return kind == OpKind::kCompute ? ops[index].start : comm_ready[comm_position];
  }
};

struct ReplayResult {
  std::vector<RankTrace> ranks;
  Time end;                     // when the last op of any rank ended
  ReplayInvariants invariants;  // what the replay checked, and any violation (kRecord)
};

class ReplayStuck : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Replay {
 public:
  // `groups[g]` lists the ranks of group g. Graphs, groups and the services must outlive the
  // replay. Compute ops are timed by `compute` (nullptr: OpDurations).
  Replay(Engine& engine, const std::vector<OpGraph>& graphs,
         const std::vector<std::vector<RankIndex>>& groups, CommService& comm,
         InvariantPolicy policy = InvariantPolicy::kThrow, ComputeService* compute = nullptr);
  ~Replay();

  // Runs until every op has ended; throws ReplayStuck otherwise, std::logic_error when a
  // collective's members disagree on its payload, ReplayInvariantError when an invariant failed
  // (kThrow), and whatever the engine throws (EventBudgetExceeded when its budget runs out).
  ReplayResult run();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wallsim
