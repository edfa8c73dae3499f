// What a replay checks about itself while it runs, and what it found.
//
// Each check costs a compare or a counter per op, so it is always on:
//
// * time: every replay callback sees the engine's time at or after the previous one, and every
//   op has ready <= start <= end. (The Engine itself refuses an event earlier than now().)
// * ops: every op of every rank starts exactly once and ends exactly once; a CommService that
//   calls `done` twice is caught here.
// * collectives: an instance starts only with every member of its group, all of them end it, and
//   at the end of the step each member has ended as many instances on each of its groups as
//   that group started.
// * transfers: a send is matched to the receive with the same (src, dst, tag) and ordinal, and
//   both sides name the same payload (a payload is an index into the builder's {op, bytes}
//   table, so equal payloads move equal bytes); at the end no send or receive is unmatched.
// * memory: a rank's bytes in use never fall below its static bytes (no free exceeds what was
//   allocated before it) and are back at the static bytes when its last op ends — both within a
//   relative kMemoryTolerance of the rank's peak, for rounding in sums of doubles.
//
// With InvariantPolicy::kThrow (the default) a replay that found any violation throws
// ReplayInvariantError from run() — a bug in a builder or a CommService, not bad input. With
// kRecord the violations are only counted and described in ReplayResult::invariants, which is
// how the tests exercise each check.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace wallsim {

enum class InvariantPolicy { kThrow, kRecord };

struct ReplayInvariants {
  static constexpr double kMemoryTolerance = 1e-9;  // of the rank's peak bytes
  static constexpr std::size_t kMaxListed = 8;      // violation lines kept

  // What ran (a complete step has ops_started == ops_ended == every op of every rank).
  std::uint64_t ops_started = 0;
  std::uint64_t ops_ended = 0;
  std::uint64_t collectives_completed = 0;   // instances, each with all members ended
  std::uint64_t collective_member_ends = 0;  // member ops ended by those instances
  std::uint64_t transfers_completed = 0;     // matched send/receive pairs ended
  std::uint64_t events = 0;                  // engine events during the replay

  // Violations, by check.
  std::uint64_t time_regressions = 0;
  std::uint64_t ops_run_twice = 0;  // started or ended again
  std::uint64_t collective_mismatches = 0;
  std::uint64_t transfer_payload_mismatches = 0;
  std::uint64_t unmatched_transfers = 0;
  std::uint64_t memory_below_static = 0;
  std::uint64_t memory_not_returned = 0;  // ranks ending above or below their static bytes

  std::vector<std::string> violations;  // the first kMaxListed, one line each

  std::uint64_t violation_count() const {
    return time_regressions + ops_run_twice + collective_mismatches + transfer_payload_mismatches +
           unmatched_transfers + memory_below_static + memory_not_returned;
  }
  bool ok() const { return violation_count() == 0; }
  // "replay invariants violated (N): <line>; <line>; ... and K more".
  std::string describe() const;
};

class ReplayInvariantError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

}  // namespace wallsim
