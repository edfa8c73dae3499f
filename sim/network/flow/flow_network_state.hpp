// Internal to the flow network (flow_network.cpp, flow_settle.cpp): the state behind
// FlowNetwork's interface. Nothing outside sim/network/flow includes it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/network/flow/flow_network.hpp"
#include "sim/network/flow/max_min_solver.hpp"

namespace wallsim {
namespace flow_internal {

// A rate that moved by less than this fraction is treated as unchanged, so rounding noise in
// a recomputation does not reschedule a completion for nothing.
constexpr double kRateChangeTolerance = 1e-12;

// One flow on one link: which flow, and which hop of that flow's path this link is.
struct Crossing {
  std::uint32_t flow_slot;
  std::uint32_t hop;
};

// A link's running load is summed afresh from its crossings after this many changes: the
// rounding of the running sum stays within a few hundred ulps of the load.
constexpr std::uint32_t kLoadResum = 256;

struct LinkState {
  double capacity_Bps = 0;
  std::vector<Crossing> crossings;  // unordered; removal swaps with the last entry
  std::uint32_t local = 0;          // index in the current MaxMinProblem
};

// What local settles need of a link (flow_local_settle.cpp), kept apart from LinkState so
// networks without them do not carry it through the cache.
struct LinkLoad {
  // The load of the flows crossing the link at their current rates, kept as rates change (and
  // summed afresh every kLoadResum changes, so rounding cannot drift).
  double load_Bps = 0;
  std::uint32_t changes = 0;
  // A local settle's view: the load of the flows it holds at their rates, the load under its
  // tentative rates (valid while `stats` equals its stamp) and the fastest flow (`max_stats`).
  double held_Bps = 0;
  double new_Bps = 0;
  double max_rate_Bps = 0;
  std::uint64_t stats = 0;
  std::uint64_t max_stats = 0;
};

}  // namespace flow_internal

// Member routes (raw, concatenated; member i's from member_begin[i]) and what the network
// needs of them: the distinct links in order of first crossing, how often the members cross
// each, and for every raw entry the index of its distinct link.
struct FlowShape {
  std::vector<std::uint32_t> links;
  std::vector<double> crossings;
  std::vector<std::uint32_t> member_links;
  std::vector<std::uint32_t> member_begin;
  std::vector<std::uint32_t> member_entry;
  bool has_empty_member = false;
  std::size_t members() const { return member_begin.size() - 1; }
};

namespace flow_internal {

// A single flow, or a class flow standing for several members that move at one rate.
struct FlowState {
  FlowId id = 0;
  bool active = false;
  FlowNetwork::Shape shape;
  std::vector<std::uint32_t> position;  // position[k]: index in shape->links[k]'s crossings
  double remaining_bytes = 0;           // per member, as of updated_at
  double rate_Bps = 0;                  // per member
  double multiplicity = 1;
  double cap_Bps = 0;
  Time updated_at;
  std::optional<Time> due;            // when the last byte arrives at the current rate
  std::uint64_t due_version = 0;      // which queue entry is this flow's current one
  FlowNetwork::Done done;             // single flows started with start()
  FlowNetwork::GroupDone group_done;  // class flows and the single flows split from one
  // Class flows: per member, the entry of its route that was its bottleneck at the last check
  // (tried first: the bottleneck of a member seldom moves).
  std::vector<std::uint32_t> witness;
  bool expanded = false;      // solved member by member at this instant (its check failed)
  std::uint32_t local = 0;    // index among the component's (or the region's) flows
  std::uint64_t region = 0;   // in the local settle's region while it equals region_stamp
  std::uint64_t checked = 0;  // checked by the local settle while it equals check_stamp
  // Single flows: the hop of links() that was the flow's bottleneck at the last local check;
  // kNoIndex when unknown (new, or re-solved whole since).
  std::uint32_t bottleneck_hop = std::numeric_limits<std::uint32_t>::max();

  std::span<const std::uint32_t> links() const { return shape->links; }
  std::size_t members() const { return shape->members(); }
};

// Relative slack of the max-min check: a link within it of its capacity is saturated, a rate
// within it of another is not faster. Far above the solver's rounding (a few ulps per flow on
// a link), far below any difference the simulation could show.
constexpr double kCheckTolerance = 1e-9;

// Components with more flows than this are first settled locally (flow_local_settle.cpp);
// smaller ones cost less to solve whole than to look for their size and grow a region in.
constexpr std::size_t kLocalSettleFrom = 64;

constexpr auto kNoIndex = std::numeric_limits<std::uint32_t>::max();
constexpr auto kWholeFlow = kNoIndex;  // a problem flow that is a whole flow, not one member

// A completion waiting in the queue; stale once its flow ended or was rescheduled.
struct Due {
  Time at;
  FlowId id;
  std::uint64_t version;
  std::uint32_t slot;
};

// std heaps are max-heaps; "later" entries sink, so the top is the earliest (time, then id).
inline bool later(const Due& a, const Due& b) {
  return a.at != b.at ? a.at > b.at : a.id > b.id;
}

}  // namespace flow_internal

struct FlowNetwork::State {
  using Crossing = flow_internal::Crossing;
  using LinkState = flow_internal::LinkState;
  using FlowState = flow_internal::FlowState;
  using Due = flow_internal::Due;

  explicit State(Engine& e) : engine(e) {}

  Engine& engine;
  std::vector<LinkState> links;
  std::vector<FlowState> flows;  // slots; a finished flow's slot is reused
  std::vector<std::uint32_t> free_slots;
  std::unordered_map<FlowId, std::uint32_t> slot_of;  // lookup only, never iterated
  FlowId next_id = 0;
  std::uint64_t started = 0;
  std::uint64_t recomputed = 0;
  std::uint64_t solved = 0;
  std::uint64_t split = 0;
  std::uint64_t reused = 0;
  // Search stamps, by link and by flow slot, apart from LinkState and FlowState so that a
  // component search reads dense arrays: visited while equal to visit_stamp.
  std::uint64_t visit_stamp = 0;
  std::vector<std::uint64_t> link_visit;
  std::vector<std::uint64_t> flow_visit;

  // Changes waiting for the settle of this instant.
  std::vector<std::uint32_t> dirty_links;
  std::optional<Time> settle_at;  // a settle event is queued for this time
  std::optional<EventId> settle_event;

  // Completion queue (min-heap of Due) and the one engine event that wakes the network.
  std::vector<Due> dues;
  std::size_t live_dues = 0;
  std::optional<EventId> wakeup;
  Time wakeup_at;

  // Scratch reused by every recomputation and batch.
  std::vector<std::uint32_t> component_links, component_flows, local_path;
  std::vector<std::uint32_t> compress_index;  // per link: scratch index, kNoIndex between uses
  std::vector<double> link_load_Bps, link_max_rate_Bps;
  std::vector<bool> bottleneck_for;
  std::vector<std::uint32_t> problem_slot, problem_member;  // per problem flow: its owner
  std::vector<double> member_crossings;
  // Link signatures: (flow, crossings) pairs of each component link, and links by hash.
  std::vector<std::pair<std::uint32_t, double>> signature;
  std::vector<std::size_t> signature_begin;
  struct TableSlot {
    std::uint64_t hash = 0;
    std::uint32_t index = 0;  // component link
    std::uint64_t stamp = 0;  // the slot is in use when it equals table_stamp
  };
  std::vector<TableSlot> table;  // links by signature hash
  std::uint64_t table_stamp = 0;
  std::vector<std::uint32_t> problem_link_stamp;
  // Merging costs a signature per link; where it found little to merge (random traffic), the
  // next settles skip it and try again later. It never changes a rate, only the solve's size.
  std::uint32_t merge_backoff = 0, merge_skipped = 0;
  MaxMinProblem problem;
  MaxMinSolver solver;
  std::vector<double> rates_Bps;
  // Solved components by key (flow_solution_cache.cpp).
  struct Solution {
    std::vector<Shape> shapes;
    std::vector<double> multiplicity, cap_Bps, rates_Bps;
    bool merged = false;
    std::size_t problem_links = 0;
  };
  std::unordered_map<std::uint64_t, Solution> solutions;
  // Local settles (flow_local_settle.cpp): the region re-solved, its links, the flows that
  // failed the check in the last round.
  std::vector<std::uint32_t> region, region_links, failing;
  std::uint64_t region_stamp = 0, check_stamp = 0, stats_stamp = 0;
  std::uint32_t local_backoff = 0, local_skipped = 0;
  std::vector<flow_internal::LinkLoad> loads;  // per link, from the first local settle on

  const FlowState* find(FlowId id) const {
    const auto it = slot_of.find(id);
    return it == slot_of.end() ? nullptr : &flows[it->second];
  }
  std::uint32_t allocate_slot();
  std::uint32_t new_flow(Shape shape, double bytes, double multiplicity, double cap_Bps);
  Shape make_shape(std::span<const std::uint32_t> route_links,
                   std::span<const std::uint32_t> member_begin);
  Shape member_shape(const FlowShape& shape, std::span<const std::uint32_t> members);
  void attach(std::uint32_t slot);
  void detach(std::uint32_t slot);
  void mark_dirty(std::uint32_t slot);
  void request_settle();
  void settle();
  void settle_alone(std::uint32_t slot);
  bool collect_component(std::size_t max_flows);
  bool settle_local();
  void add_to_region(std::uint32_t slot);
  void build_local_problem();
  bool check_region();
  bool has_bottleneck(std::uint32_t slot);
  double tentative_rate(const FlowState& flow) const;
  bool is_bottleneck(std::uint32_t link, double rate_Bps);
  void add_load(std::uint32_t link, double load_Bps);
  void sum_load(std::uint32_t link);
  void keep_loads();
  void order_component_links();
  bool merge_decision() const;
  void note_merge(bool merged, std::size_t problem_links);
  std::uint64_t component_key(bool merged) const;
  bool reuse_solution(bool merged);
  void keep_solution(bool merged);
  void build_problem(bool try_merge);
  void add_links(bool merge_equal);
  std::uint64_t sign_link(std::uint32_t link);
  bool classes_hold();
  bool members_have_bottlenecks(std::uint32_t problem_flow);
  bool every_member_has_bottleneck(FlowState& flow);
  void add_member(const FlowState& flow, std::uint32_t member);
  void resolve_expanded(std::uint32_t slot, std::uint32_t first, std::uint32_t last);
  void retire(std::uint32_t slot);
  void remove(std::uint32_t slot);
  void apply_rate(std::uint32_t slot, double rate_Bps);
  bool is_live(const Due& entry) const;
  void push_due(std::uint32_t slot);
  void drop_stale_dues();
  void arm_wakeup();
  void wake();
};

}  // namespace wallsim
