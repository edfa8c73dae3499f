// Explaining a replay that drained the engine with ops left unfinished: for each stuck rank,
// the head op of every unfinished stream and what it is waiting for. Runs once, after the
// replay, so clarity beats speed here.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "sim/graph/replay_state.hpp"

namespace wallsim::replay_detail {
namespace {

constexpr std::size_t kMaxListed = 8;  // ranks or ops named per line before "and N more"

template <typename Item, typename Write>
void write_list(std::ostream& out, const std::vector<Item>& items, Write write) {
  for (std::size_t i = 0; i < items.size() && i < kMaxListed; ++i) {
    if (i > 0) out << ", ";
    write(items[i]);
  }
  if (items.size() > kMaxListed) out << " and " << items.size() - kMaxListed << " more";
}

// "(collective on group 2 #0)", "(send to rank 4 #1)", "(recv from rank 2 #1)"; empty for
// compute ops.
std::string comm_tag(const RankState& rs, OpIndex index) {
  const Op& op = rs.graph->op(index);
  const std::string ordinal = " #" + std::to_string(rs.ordinal(index)) + ")";
  switch (op.kind) {
    case OpKind::kCollective:
      return " (collective on group " + std::to_string(op.group) + ordinal;
    case OpKind::kSend:
      return " (send to rank " + std::to_string(op.peer) + ordinal;
    case OpKind::kRecv:
      return " (recv from rank " + std::to_string(op.peer) + ordinal;
    case OpKind::kCompute:
      return "";
  }
  return "";
}

void write_unmet_dependencies(std::ostream& out, const RankState& rs, OpIndex index) {
  std::vector<OpIndex> unmet;
  for (const OpIndex before : rs.graph->dependencies(index)) {
    if (rs.phase(before) != Phase::kEnded) unmet.push_back(before);
  }
  out << " waits for ";
  write_list(out, unmet, [&](OpIndex before) {
    out << "op " << op_name(*rs.graph, before) << " on stream "
        << static_cast<int>(rs.graph->op(before).stream);
  });
}

void write_missing_members(std::ostream& out, const State& state, const RankState& rs,
                           OpIndex index) {
  const GroupState& gs = state.groups[rs.graph->op(index).group];
  const PendingCollective& pending = gs.pending[rs.ordinal(index) - gs.first_ordinal];
  std::vector<RankIndex> arrived;
  for (const Member& m : pending.arrived) arrived.push_back(m.rank);
  std::sort(arrived.begin(), arrived.end());
  std::vector<RankIndex> missing;
  std::set_difference(gs.members.begin(), gs.members.end(), arrived.begin(), arrived.end(),
                      std::back_inserter(missing));
  out << " waits for ranks ";
  write_list(out, missing, [&](RankIndex r) { out << r; });
}

void write_waiting_comm(std::ostream& out, const State& state, const RankState& rs, OpIndex index) {
  switch (rs.graph->op(index).kind) {
    case OpKind::kCollective:
      return write_missing_members(out, state, rs, index);
    case OpKind::kSend:
      out << " has no matching recv";
      return;
    case OpKind::kRecv:
      out << " has no matching send";
      return;
    case OpKind::kCompute:
      return;
  }
}

void write_head(std::ostream& out, const State& state, RankIndex rank, std::size_t stream) {
  const RankState& rs = state.ranks[rank];
  const OpIndex index = rs.stream_ops[stream][rs.cursor[stream]];
  out << "\n  rank " << rank << " stream " << stream << " op " << op_name(*rs.graph, index)
      << comm_tag(rs, index);
  switch (rs.phase(index)) {
    case Phase::kWaiting:
      if (rs.remaining_deps(index) > 0) return write_unmet_dependencies(out, rs, index);
      if (rs.host_blocked_before(index)) {
        const OpIndex sync = rs.host_syncs[rs.sync_cursor];
        out << " waits for the host, which waits for op " << op_name(*rs.graph, sync)
            << " on stream " << static_cast<int>(rs.graph->op(sync).stream) << " to end";
        return;
      }
      out << " was never issued";  // cannot happen: a head with no pending dependency issues
      return;
    case Phase::kAwaitingHost:
      out << " waits for the host to issue it";  // cannot happen: an event is scheduled
      return;
    case Phase::kIssued:
      return write_waiting_comm(out, state, rs, index);
    case Phase::kStarted:
      out << " started but never ended (the CommService did not call done)";
      return;
    case Phase::kEnded:
      return;
  }
}

}  // namespace

// Appending, rather than "'" + label + "'", sidesteps a GCC 12 -Wrestrict false positive.
std::string op_name(const OpGraph& graph, OpIndex index) {
  const std::uint32_t label = graph.op(index).label;
  std::string name;
  if (label < graph.label_count()) {
    name += '\'';
    name += graph.label(label);
    name += '\'';
  } else {
    name += '#';
    name += std::to_string(index);
  }
  return name;
}

std::string describe_stuck(const State& state, std::size_t max_ranks) {
  std::vector<RankIndex> stuck;
  for (std::size_t r = 0; r < state.ranks.size(); ++r) {
    if (state.ranks[r].ops_ended < state.ranks[r].graph->size()) {
      stuck.push_back(static_cast<RankIndex>(r));
    }
  }
  std::ostringstream out;
  out << "replay stuck: " << state.ops_total - state.ops_ended << " of " << state.ops_total
      << " ops never ended, on " << stuck.size() << " rank(s); blocked stream heads:";
  for (std::size_t i = 0; i < stuck.size() && i < max_ranks; ++i) {
    const RankState& rs = state.ranks[stuck[i]];
    for (std::size_t s = 0; s < rs.stream_ops.size(); ++s) {
      if (rs.cursor[s] < rs.stream_ops[s].size()) write_head(out, state, stuck[i], s);
    }
  }
  if (stuck.size() > max_ranks) out << "\n  and " << stuck.size() - max_ranks << " more ranks";
  return out.str();
}

}  // namespace wallsim::replay_detail
