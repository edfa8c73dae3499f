// The replay's self-checks (replay_invariants.hpp): the per-event ones the scheduler calls, and
// the end-of-step ones run once after the engine drained.
#include "sim/graph/replay_invariants.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "sim/graph/replay_state.hpp"

namespace wallsim {

std::string ReplayInvariants::describe() const {
  std::string text = "replay invariants violated (" + std::to_string(violation_count()) + "):";
  for (std::size_t i = 0; i < violations.size(); ++i) {
    text += i == 0 ? " " : "; ";
    text += violations[i];
  }
  if (violation_count() > violations.size()) {
    text += " and " + std::to_string(violation_count() - violations.size()) + " more";
  }
  return text;
}

namespace replay_detail {
namespace {

std::string bytes_text(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", bytes);
  return text;
}

double memory_tolerance(const RankState& rs) {
  return ReplayInvariants::kMemoryTolerance * std::max(std::abs(rs.trace.peak_bytes), 1.0);
}

std::string rank_name(std::size_t rank) {
  return "rank " + std::to_string(rank);
}

// Each member ended as many instances on each of its groups as the group started.
void check_collective_counts(State& state) {
  for (std::size_t r = 0; r < state.ranks.size(); ++r) {
    const RankState& rs = state.ranks[r];
    for (std::size_t slot = 0; slot < rs.slot_group.size(); ++slot) {
      const GroupIndex group = rs.slot_group[slot];
      const std::uint32_t started = state.groups[group].first_ordinal;
      if (rs.collectives_ended[slot] == started) continue;
      note_violation(state.invariants, state.invariants.collective_mismatches,
                     rank_name(r) + " ended " + std::to_string(rs.collectives_ended[slot]) +
                         " collectives on group " + std::to_string(group) + ", which started " +
                         std::to_string(started));
    }
  }
}

void check_channels_drained(State& state) {
  for (const Channel& channel : state.channels) {
    if (channel.sends_issued == channel.recvs_issued && channel.pending.empty()) continue;
    note_violation(state.invariants, state.invariants.unmatched_transfers,
                   std::to_string(channel.sends_issued) + " sends from rank " +
                       std::to_string(channel.src) + " to rank " + std::to_string(channel.dst) +
                       " against " + std::to_string(channel.recvs_issued) + " receives");
  }
}

void check_memory_returned(State& state) {
  for (std::size_t r = 0; r < state.ranks.size(); ++r) {
    const RankState& rs = state.ranks[r];
    const double excess = rs.memory_in_use - rs.graph->static_bytes;
    if (std::abs(excess) <= memory_tolerance(rs)) continue;
    note_violation(state.invariants, state.invariants.memory_not_returned,
                   rank_name(r) + " ends the step holding " + bytes_text(rs.memory_in_use) +
                       " bytes, not its static " + bytes_text(rs.graph->static_bytes) +
                       " (allocations and frees differ by " + bytes_text(excess) + ")");
  }
}

}  // namespace

void note_violation(ReplayInvariants& invariants, std::uint64_t& counter, std::string line) {
  ++counter;
  if (invariants.violations.size() < ReplayInvariants::kMaxListed) {
    invariants.violations.push_back(std::move(line));
  }
}

void note_time_regression(State& state, Time now) {
  note_violation(state.invariants, state.invariants.time_regressions,
                 "engine time " + std::to_string(now.ps()) + " ps after " +
                     std::to_string(state.last_seen.ps()) + " ps");
}

void note_op_times(State& state, RankIndex rank, OpIndex index, Time ready) {
  const OpRecord& record = state.ranks[rank].trace.ops[index];
  note_violation(state.invariants, state.invariants.time_regressions,
                 rank_name(static_cast<std::size_t>(rank)) + " op " +
                     op_name(*state.ranks[rank].graph, index) + " has ready " +
                     std::to_string(ready.ps()) + " ps, start " +
                     std::to_string(record.start.ps()) + " ps, end " +
                     std::to_string(record.end.ps()) + " ps");
}

void check_memory_floor(State& state, RankIndex rank) {
  const RankState& rs = state.ranks[rank];
  const double floor = rs.graph->static_bytes - memory_tolerance(rs);
  if (rs.memory_in_use >= floor) return;
  note_violation(state.invariants, state.invariants.memory_below_static,
                 rank_name(static_cast<std::size_t>(rank)) + " holds " +
                     bytes_text(rs.memory_in_use) + " bytes at " +
                     std::to_string(state.engine.now().ps()) + " ps, below its static " +
                     bytes_text(rs.graph->static_bytes) + ": an op freed more than was allocated");
}

void check_end_of_step(State& state) {
  check_collective_counts(state);
  check_channels_drained(state);
  check_memory_returned(state);
}

}  // namespace replay_detail
}  // namespace wallsim
