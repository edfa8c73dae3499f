#include "sim/graph/replay.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "sim/graph/replay_state.hpp"

namespace wallsim {

using replay_detail::Channel;
using replay_detail::check_time;
using replay_detail::GroupState;
using replay_detail::Member;
using replay_detail::note_violation;
using replay_detail::op_name;
using replay_detail::PendingCollective;
using replay_detail::PendingTransfer;
using replay_detail::Phase;
using replay_detail::RankState;

namespace {

// The pending instance for `ordinal`, created (with any before it) on first arrival.
template <typename Pending>
Pending& pending_at(std::deque<Pending>& pending, std::uint32_t first_ordinal,
                    std::uint32_t ordinal) {
  const std::size_t slot = ordinal - first_ordinal;
  if (slot >= pending.size()) pending.resize(slot + 1);
  return pending[slot];
}

std::string where(RankIndex rank, const OpGraph& graph, OpIndex index) {
  return "Replay: rank " + std::to_string(rank) + " op " + op_name(graph, index);
}

std::vector<RankIndex> checked_members(const std::vector<RankIndex>& group, GroupIndex index,
                                       std::size_t rank_count) {
  std::vector<RankIndex> members = group;
  std::sort(members.begin(), members.end());
  const auto name = "Replay: group " + std::to_string(index);
  if (members.empty()) throw std::invalid_argument(name + " has no members");
  if (members.front() < 0 || static_cast<std::size_t>(members.back()) >= rank_count) {
    throw std::invalid_argument(name + " names a rank outside 0.." +
                                std::to_string(rank_count - 1));
  }
  if (std::adjacent_find(members.begin(), members.end()) != members.end()) {
    throw std::invalid_argument(name + " lists a rank twice");
  }
  return members;
}

}  // namespace

struct Replay::State : replay_detail::State {
  using replay_detail::State::State;

  void build(const std::vector<OpGraph>& graphs, const std::vector<std::vector<RankIndex>>& table);
  void build_rank(RankIndex rank, const OpGraph& graph, const std::shared_ptr<TableArena>& arena);
  std::uint32_t link_of(RankIndex rank, const OpGraph& graph, OpIndex index,
                        std::map<GroupIndex, std::uint32_t>& slots);
  std::uint32_t channel_of(RankIndex src, RankIndex dst, std::uint16_t tag);

  void issue_all_heads();
  void issue_if_ready(RankIndex rank, OpIndex index);
  bool waits_for_host(RankIndex rank, OpIndex index);
  void release_host(RankIndex rank, OpIndex sync);
  void arrive(RankIndex rank, OpIndex index, const Op& op);
  void start_compute(RankIndex rank, OpIndex index, const Op& op);
  void arrive_collective(RankIndex rank, OpIndex index, const Op& op);
  void arrive_send(RankIndex rank, OpIndex index);
  void arrive_recv(RankIndex rank, OpIndex index);
  void start_collective(GroupIndex group);
  void start_transfer(std::uint32_t channel);
  void start_op(RankIndex rank, OpIndex index);
  void finish_op(RankIndex rank, OpIndex index);
  void change_memory(RankIndex rank, double delta_bytes);

  // Channel lookup during construction only; the hot path uses the per-op link.
  std::map<std::tuple<RankIndex, RankIndex, std::uint16_t>, std::uint32_t> channel_index;
};

// ---- construction: dense tables, validated once -------------------------------------------

void Replay::State::build(const std::vector<OpGraph>& graphs,
                          const std::vector<std::vector<RankIndex>>& table) {
  groups.resize(table.size());
  for (GroupIndex g = 0; g < table.size(); ++g) {
    groups[g].members = checked_members(table[g], g, graphs.size());
  }
  ranks.resize(graphs.size());
  // Every rank's per-op state and records in one arena (huge pages; sim/core/table_arena.hpp).
  constexpr std::size_t kPerOpBytes = sizeof(OpRecord) + sizeof(std::uint32_t);
  constexpr std::size_t kPerCommOpBytes = sizeof(RankState::CommSlot) + sizeof(Time);
  constexpr std::size_t kAlignmentSlack = 4 * alignof(std::max_align_t);
  std::size_t arena_bytes = 0;
  for (const OpGraph& graph : graphs) {
    arena_bytes += graph.size() * kPerOpBytes + graph.comm_count() * kPerCommOpBytes;
    arena_bytes += kAlignmentSlack;
  }
  const auto arena = std::make_shared<TableArena>(arena_bytes);
  for (std::size_t r = 0; r < graphs.size(); ++r) {
    build_rank(static_cast<RankIndex>(r), graphs[r], arena);
  }
  channel_index.clear();
}

void Replay::State::build_rank(RankIndex rank, const OpGraph& graph,
                               const std::shared_ptr<TableArena>& arena) {
  RankState& rs = ranks[rank];
  const auto n = static_cast<OpIndex>(graph.size());
  rs.graph = &graph;
  rs.dependents = graph.dependent_index();
  rs.comm_position = graph.comm_positions();
  rs.host_issued = graph.host_issued();
  rs.host_syncs = graph.host_syncs();
  // Program order and dependents come from the graph (shared by ranks with one body).
  for (int s = 0; s < graph.stream_count(); ++s) {
    rs.stream_ops.push_back(graph.stream_ops(static_cast<StreamIndex>(s)));
  }
  rs.cursor.assign(rs.stream_ops.size(), 0);
  rs.op_state = decltype(rs.op_state)(n, 0, ArenaAllocator<std::uint32_t>(arena));
  rs.comm = decltype(rs.comm)(graph.comm_count(), RankState::CommSlot{},
                              ArenaAllocator<RankState::CommSlot>(arena));
  rs.trace.comm_ready =
      decltype(rs.trace.comm_ready)(graph.comm_count(), Time::zero(), ArenaAllocator<Time>(arena));
  std::map<GroupIndex, std::uint32_t> slots;
  // A collective's ordinal on its group is its place in the rank's program among the group's
  // collectives, as NCCL matches a communicator's calls by the order the host made them, not
  // by the order their streams reach them (a rank may feed one group from several streams).
  std::vector<std::uint32_t> program_ordinal;  // per slot; slots are numbered as first met
  for (OpIndex i = 0; i < n; ++i) {
    const std::size_t dependencies = graph.dependency_count(i);
    if (dependencies > RankState::kDepsMask) {
      throw std::invalid_argument(where(rank, graph, i) + " has " + std::to_string(dependencies) +
                                  " dependencies (at most " + std::to_string(RankState::kDepsMask) +
                                  ")");
    }
    rs.op_state[i] = static_cast<std::uint32_t>(dependencies);  // Phase::kWaiting is 0
    const OpKind kind = graph.shared_op(i).kind;
    if (kind == OpKind::kCompute) continue;
    const std::uint32_t link = rs.link(i) = link_of(rank, graph, i, slots);
    if (kind != OpKind::kCollective) continue;
    if (link == program_ordinal.size()) program_ordinal.push_back(0);
    rs.ordinal(i) = program_ordinal[link]++;
  }
  rs.collectives_ended.assign(slots.size(), 0);
  rs.slot_group.resize(slots.size());
  for (const auto& [group, slot] : slots) rs.slot_group[slot] = group;
  rs.trace.ops = OpRecords(n, OpRecord{}, ArenaAllocator<OpRecord>(arena));
  ops_total += n;
}

// A collective's link is a dense per-rank slot for its group; a send's or receive's is the
// index of its channel. Invalid groups and peers are builder bugs, caught here.
std::uint32_t Replay::State::link_of(RankIndex rank, const OpGraph& graph, OpIndex index,
                                     std::map<GroupIndex, std::uint32_t>& slots) {
  const Op& op = graph.op(index);
  if (op.kind == OpKind::kCompute) return 0;
  if (op.kind == OpKind::kCollective) {
    if (op.group >= groups.size()) {
      throw std::invalid_argument(where(rank, graph, index) + ": group " +
                                  std::to_string(op.group) + " does not exist");
    }
    const auto& members = groups[op.group].members;
    if (!std::binary_search(members.begin(), members.end(), rank)) {
      throw std::invalid_argument(where(rank, graph, index) + ": rank is not a member of group " +
                                  std::to_string(op.group));
    }
    return slots.emplace(op.group, static_cast<std::uint32_t>(slots.size())).first->second;
  }
  if (op.peer < 0 || static_cast<std::size_t>(op.peer) >= ranks.size() || op.peer == rank) {
    throw std::invalid_argument(where(rank, graph, index) + ": invalid peer " +
                                std::to_string(op.peer));
  }
  return op.kind == OpKind::kSend ? channel_of(rank, op.peer, op.tag)
                                  : channel_of(op.peer, rank, op.tag);
}

std::uint32_t Replay::State::channel_of(RankIndex src, RankIndex dst, std::uint16_t tag) {
  const auto [it, inserted] =
      channel_index.emplace(std::tuple(src, dst, tag), static_cast<std::uint32_t>(channels.size()));
  if (inserted) {
    channels.emplace_back();
    channels.back().src = src;
    channels.back().dst = dst;
  }
  return it->second;
}

// ---- issuing: an op is ready when it heads its stream and its dependencies have ended -----

void Replay::State::issue_all_heads() {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    RankState& rs = ranks[r];
    rs.memory_in_use = rs.graph->static_bytes;
    rs.trace.peak_bytes = rs.memory_in_use;
    rs.trace.memory.push_back({engine.now(), rs.memory_in_use});
    // Program order among the first heads: a collective added before a kernel is launched
    // first, so the kernel sees its SMs taken.
    std::vector<OpIndex> heads;
    for (const auto& stream : rs.stream_ops) {
      if (!stream.empty()) heads.push_back(stream.front());
    }
    std::sort(heads.begin(), heads.end());
    for (const OpIndex head : heads) issue_if_ready(static_cast<RankIndex>(r), head);
  }
}

void Replay::State::issue_if_ready(RankIndex rank, OpIndex index) {
  RankState& rs = ranks[rank];
  if (rs.op_state[index] != 0) return;  // not kWaiting, or dependencies left
  const Op& op = rs.graph->shared_op(index);
  const auto& stream = rs.stream_ops[op.stream];
  const std::uint32_t head = rs.cursor[op.stream];
  if (head >= stream.size() || stream[head] != index) return;
  if (waits_for_host(rank, index)) return;
  rs.set_phase(index, Phase::kIssued);
  if (op.kind != OpKind::kCompute) rs.trace.comm_ready[rs.comm_position[index]] = engine.now();
  arrive(rank, index, op);
}

// An op the host has not issued yet waits: for the sync before it to end (issue_if_ready is
// called again for the stream heads then), or for the time the host issues it.
bool Replay::State::waits_for_host(RankIndex rank, OpIndex index) {
  RankState& rs = ranks[rank];
  if (rs.host_blocked_before(index)) return true;
  const Time issued = rs.host_issue_time(index);
  if (issued <= engine.now()) return false;
  rs.set_phase(index, Phase::kAwaitingHost);
  engine.schedule_at(issued, [this, rank, index] {
    ranks[rank].set_phase(index, Phase::kWaiting);
    issue_if_ready(rank, index);
  });
  return true;
}

// The host resumes when the op it synchronised on ends, and issues what follows it.
void Replay::State::release_host(RankIndex rank, OpIndex sync) {
  RankState& rs = ranks[rank];
  rs.host_base = max(rs.host_issue_time(sync), engine.now());
  rs.host_base_issued = rs.host_issued[sync];
  ++rs.sync_cursor;
  for (std::size_t s = 0; s < rs.stream_ops.size(); ++s) {
    const auto& stream = rs.stream_ops[s];
    if (rs.cursor[s] < stream.size()) issue_if_ready(rank, stream[rs.cursor[s]]);
  }
}

void Replay::State::arrive(RankIndex rank, OpIndex index, const Op& op) {
  if (op.kind == OpKind::kCompute) return start_compute(rank, index, op);
  // A NCCL kernel is launched when its stream reaches it and spins on its SMs while it waits
  // for its peers, so it slows compute from arrival, not from when data starts to move.
  if (op.occupies_sms) ++ranks[rank].sm_comm_running;
  switch (op.kind) {
    case OpKind::kCollective:
      return arrive_collective(rank, index, op);
    case OpKind::kSend:
      return arrive_send(rank, index);
    case OpKind::kRecv:
      return arrive_recv(rank, index);
    case OpKind::kCompute:
      return;
  }
}

void Replay::State::start_compute(RankIndex rank, OpIndex index, const Op& op) {
  const bool contended = ranks[rank].sm_comm_running > 0;
  start_op(rank, index);
  const Time duration = compute.duration(rank, index, op, contended);
  engine.schedule_after(duration, [this, rank, index] { finish_op(rank, index); });
}

// ---- communication: arrivals meet by ordinal, then the CommService times them --------------

// `op` is the shared body's: its group is the rank's through the slot table.
void Replay::State::arrive_collective(RankIndex rank, OpIndex index, const Op& op) {
  RankState& rs = ranks[rank];
  const std::uint32_t slot = rs.link(index);
  const std::uint32_t ordinal = rs.ordinal(index);
  const GroupIndex group = rs.slot_group[slot];
  GroupState& gs = groups[group];
  PendingCollective& pending = pending_at(gs.pending, gs.first_ordinal, ordinal);
  if (pending.arrived.empty()) {
    pending.payload = op.payload;
  } else if (pending.payload != op.payload) {
    const Member first = pending.arrived.front();
    throw std::logic_error(where(rank, *rs.graph, index) + " (collective on group " +
                           std::to_string(group) + " #" + std::to_string(ordinal) +
                           ") has payload " + std::to_string(op.payload) + " but rank " +
                           std::to_string(first.rank) + " has " + std::to_string(pending.payload));
  }
  pending.arrived.push_back({rank, index});
  // Instances start in ordinal order: a complete one waits for those before it.
  while (!gs.pending.empty() && gs.pending.front().arrived.size() == gs.members.size()) {
    start_collective(group);
  }
}

void Replay::State::start_collective(GroupIndex group) {
  GroupState& gs = groups[group];
  // The complete instance is the front one (see GroupState); take it out before calling the
  // service so that a synchronous `done` finds consistent tables.
  PendingCollective instance = std::move(gs.pending.front());
  gs.pending.pop_front();
  ++gs.first_ordinal;
  if (instance.arrived.size() != gs.members.size()) {
    note_violation(invariants, invariants.collective_mismatches,
                   "group " + std::to_string(group) + " #" + std::to_string(gs.first_ordinal - 1) +
                       " started with " + std::to_string(instance.arrived.size()) + " of " +
                       std::to_string(gs.members.size()) + " members");
  }
  for (const Member& m : instance.arrived) start_op(m.rank, m.op);
  comm.start_collective(group, instance.payload, [this, members = std::move(instance.arrived)] {
    for (const Member& m : members) finish_op(m.rank, m.op);
    ++invariants.collectives_completed;
    invariants.collective_member_ends += members.size();
  });
}

void Replay::State::arrive_send(RankIndex rank, OpIndex index) {
  RankState& rs = ranks[rank];
  const std::uint32_t link = rs.link(index);
  Channel& channel = channels[link];
  const std::uint32_t ordinal = rs.ordinal(index) = channel.sends_issued++;
  PendingTransfer& pending = pending_at(channel.pending, channel.first_ordinal, ordinal);
  pending.send = index;
  if (pending.recv) start_transfer(link);
}

void Replay::State::arrive_recv(RankIndex rank, OpIndex index) {
  RankState& rs = ranks[rank];
  const std::uint32_t link = rs.link(index);
  Channel& channel = channels[link];
  const std::uint32_t ordinal = rs.ordinal(index) = channel.recvs_issued++;
  PendingTransfer& pending = pending_at(channel.pending, channel.first_ordinal, ordinal);
  pending.recv = index;
  if (pending.send) start_transfer(link);
}

// Both sides must name the same payload (an invariant); the transfer moves the sender's.
void Replay::State::start_transfer(std::uint32_t channel_id) {
  Channel& channel = channels[channel_id];
  const PendingTransfer transfer = channel.pending.front();
  channel.pending.pop_front();
  ++channel.first_ordinal;
  const RankIndex src = channel.src;
  const RankIndex dst = channel.dst;
  const OpIndex send = *transfer.send;
  const OpIndex recv = *transfer.recv;
  const std::uint32_t payload = ranks[src].graph->shared_op(send).payload;
  const std::uint32_t received = ranks[dst].graph->shared_op(recv).payload;
  if (payload != received) {
    note_violation(invariants, invariants.transfer_payload_mismatches,
                   where(src, *ranks[src].graph, send) + " sends payload " +
                       std::to_string(payload) + " to rank " + std::to_string(dst) + " op " +
                       op_name(*ranks[dst].graph, recv) + ", which receives payload " +
                       std::to_string(received) + " (transfer #" +
                       std::to_string(channel.first_ordinal - 1) + ")");
  }
  start_op(src, send);
  start_op(dst, recv);
  comm.start_transfer(src, dst, payload, [this, src, dst, send, recv] {
    finish_op(src, send);
    finish_op(dst, recv);
    ++invariants.transfers_completed;
  });
}

// ---- start and end of any op ----------------------------------------------------------------

void Replay::State::start_op(RankIndex rank, OpIndex index) {
  RankState& rs = ranks[rank];
  check_time(*this);
  if (rs.phase(index) != Phase::kIssued) {
    note_violation(invariants, invariants.ops_run_twice,
                   where(rank, *rs.graph, index) + " started twice");
    return;
  }
  ++invariants.ops_started;
  rs.set_phase(index, Phase::kStarted);
  rs.trace.ops[index].start = engine.now();
  change_memory(rank, rs.graph->shared_op(index).alloc_bytes);
}

void Replay::State::finish_op(RankIndex rank, OpIndex index) {
  RankState& rs = ranks[rank];
  check_time(*this);
  if (rs.phase(index) != Phase::kStarted) {
    note_violation(invariants, invariants.ops_run_twice,
                   where(rank, *rs.graph, index) +
                       " ended while not running (CommService called done twice?)");
    return;
  }
  const Op& op = rs.graph->shared_op(index);
  rs.set_phase(index, Phase::kEnded);
  rs.trace.ops[index].end = engine.now();
  replay_detail::check_op_times(*this, rank, index, op);
  ++invariants.ops_ended;
  if (op.kind == OpKind::kCollective) ++rs.collectives_ended[rs.link(index)];
  change_memory(rank, -op.free_bytes);
  if (op.kind != OpKind::kCompute && op.occupies_sms) --rs.sm_comm_running;
  ++rs.ops_ended;
  ++ops_ended;
  end = max(end, engine.now());
  if (op.host_sync && rs.sync_cursor < rs.host_syncs.size() &&
      rs.host_syncs[rs.sync_cursor] == index) {
    release_host(rank, index);
  }
  const auto& stream = rs.stream_ops[op.stream];
  const std::uint32_t next = ++rs.cursor[op.stream];
  if (next < stream.size()) issue_if_ready(rank, stream[next]);
  for (const OpIndex after : rs.dependents_of(index)) {
    if (rs.dependency_ended(after) == 0) issue_if_ready(rank, after);
  }
}

// Samples at the same instant collapse to the last value: a reader sees the state between
// instants, not the order of events within one.
void Replay::State::change_memory(RankIndex rank, double delta_bytes) {
  if (delta_bytes == 0) return;
  RankState& rs = ranks[rank];
  rs.memory_in_use += delta_bytes;
  rs.trace.peak_bytes = std::max(rs.trace.peak_bytes, rs.memory_in_use);
  if (delta_bytes < 0) replay_detail::check_memory_floor(*this, rank);
  auto& samples = rs.trace.memory;
  if (!samples.empty() && samples.back().at == engine.now()) {
    samples.back().bytes = rs.memory_in_use;
  } else {
    samples.push_back({engine.now(), rs.memory_in_use});
  }
}

// ---- public API -------------------------------------------------------------------------------

Time OpDurations::duration(RankIndex, OpIndex, const Op& op, bool contended) {
  return contended ? max(op.duration, op.duration_contended) : op.duration;
}

Replay::Replay(Engine& engine, const std::vector<OpGraph>& graphs,
               const std::vector<std::vector<RankIndex>>& groups, CommService& comm,
               InvariantPolicy policy, ComputeService* compute)
    : state_(std::make_unique<State>(engine, comm, policy, compute)) {
  state_->build(graphs, groups);
}

Replay::~Replay() = default;

ReplayResult Replay::run() {
  State& s = *state_;
  if (s.ran) throw std::logic_error("Replay::run: a replay runs once");
  s.ran = true;
  const std::uint64_t events_before = s.engine.events_executed();
  s.last_seen = s.engine.now();
  s.issue_all_heads();
  s.engine.run();
  s.invariants.events = s.engine.events_executed() - events_before;
  if (s.ops_ended != s.ops_total) throw ReplayStuck(replay_detail::describe_stuck(s, 10));
  replay_detail::check_end_of_step(s);
  if (s.policy == InvariantPolicy::kThrow && !s.invariants.ok()) {
    throw ReplayInvariantError(s.invariants.describe());
  }
  ReplayResult result;
  result.end = s.end;
  result.invariants = std::move(s.invariants);
  result.ranks.reserve(s.ranks.size());
  for (RankState& rs : s.ranks) result.ranks.push_back(std::move(rs.trace));
  return result;
}

}  // namespace wallsim
