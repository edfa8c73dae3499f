// Flow-level network: bandwidth of each link shared max-min fairly among the flows crossing it.
//
// Model (the classic progressive-filling definition of max-min fairness, as in SimGrid's
// LMM solver): every active flow f has a weight m_f (its multiplicity: m_f identical flows
// travelling together, used by symmetric simulation) and an optional rate cap. Rates r_f are
// the max-min fair allocation subject to, for every link l,
//     sum over flows f crossing l of m_f * r_f  <=  capacity_l,
// and r_f <= cap_f. Progressive filling raises all unfrozen rates together; the link whose
// remaining capacity per unfrozen weight is smallest saturates first and freezes its flows.
//
// One solve per instant. Rates change only when flows start or end. A start or an end marks
// the flow's links dirty and asks for one *settle* at the current time, a late engine event
// (it runs after every ordinary event of that time). The settle re-solves, once, the union
// of the components (flows connected through shared links) that touch the dirty links; other
// flows keep their rates. In a component of more than 64 flows it first re-solves a region
// around the change and keeps the result only if the max-min check below holds for the whole
// network (flow_local_settle.cpp), so a start in permutation traffic over thousands of flows
// costs a few dozen. Starting a 4,032-flow all-to-all phase therefore costs one solve, not
// 4,032. No simulated time passes between a change and its settle, so batching moves nothing:
// the rates a flow sends at over any interval are the max-min rates of the flows active over
// it. Queries (rate, active_flows, counters) settle pending changes first, so they always see
// settled rates.
//
// Flow classes. start_group starts n flows of equal bytes that the caller expects to move at
// one rate (the transfers of one collective phase whose routes are images of each other under
// the topology's symmetry) as one *class flow*: one weighted flow that crosses each link as many
// times as its members do, so the solver sees a few class flows instead of thousands of
// members. That is exact only where the max-min solution gives every member the same rate, and
// the network checks it after every solve instead of assuming it: an allocation is the
// (unique) max-min fair one if and only if it is feasible and every flow is at its cap or
// crosses a saturated link on which no flow is faster (Bertsekas & Gallager, "Data Networks",
// §6.5.2). Loads are the same with the class merged or split, so feasibility carries over; the
// check asks each member for its own bottleneck link among its own links (saturated within
// 1e-9, no faster flow on it). A class that fails (skewed loads, another flow sharing only some
// of its links) is split into single flows for the rest of its life and the instant is solved
// again, so rates are always the max-min rates of the single flows.
//
// Repeated components. The rates of a component whose classes all held are kept, keyed by its
// flows' shapes, multiplicities and caps; a later component of the same flows takes them
// instead of solving again: the same problem, so the same rates to the bit
// (flow_solution_cache.cpp). A layer's collectives repeat thousands of times per step.
//
// Batched completions. Completions wait in the network's own queue, and one engine event wakes
// the network at the earliest. Every flow due within kCompletionTolerance of that time ends in
// the same batch (at most that much early; its unsent remainder, at most rate × tolerance
// bytes, is dropped), so flows that are due together up to rounding cost one settle instead of
// one each. Their callbacks run in (due time, flow id) order, before the settle: anything a
// callback starts is solved together with what the batch freed.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "sim/core/engine.hpp"

namespace wallsim {

using FlowId = std::uint64_t;

// The routes of a flow or class, checked and compressed once (FlowNetwork::make_shape) and
// shared by every flow started from them.
struct FlowShape;

class FlowNetwork {
 public:
  using Done = std::function<void()>;

  // Flows due within this much of the first one of a batch end together with it. One
  // nanosecond is far below every latency the network models (the shortest, a NIC traversal,
  // is 150 ns; an NVLink step 600 ns) and far above the picosecond rounding of due times, so
  // flows that end together up to rounding share one settle. A completion moves by at most
  // this much, earlier.
  static constexpr Time kCompletionTolerance = Time::from_ps(1000);

  FlowNetwork(Engine& engine, std::vector<double> link_capacity_Bps);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Starts a flow of `bytes` over `links` now; `done` runs (as an engine event) when the last
  // byte has arrived. A flow with no links, or zero bytes, completes at the current time.
  // A link listed k times is crossed k times (it carries k × multiplicity × rate).
  FlowId start(std::span<const std::uint32_t> links, double bytes, Done done,
               double multiplicity = 1.0,
               double rate_cap_Bps = std::numeric_limits<double>::infinity());

  // Called with how many members ended: all of them at once while they travel as a class,
  // one at a time after a split.
  using GroupDone = std::function<void(std::size_t members_done)>;

  // Starts one flow of `bytes` per member route as a class (see above): member i crosses
  // links[member_begin[i] .. member_begin[i + 1]). `member_begin` starts at 0, ends at
  // links.size() and has at least two entries. Members with no links or zero bytes complete at
  // the current time. Returns the class flow's id.
  FlowId start_group(std::span<const std::uint32_t> links,
                     std::span<const std::uint32_t> member_begin, double bytes, GroupDone done,
                     double multiplicity = 1.0,
                     double rate_cap_Bps = std::numeric_limits<double>::infinity());

  // start_group in two steps, for callers that start the same routes many times: the shape
  // (member routes checked against the links, compressed to distinct links with crossing
  // counts) is made once, and each start shares it.
  using Shape = std::shared_ptr<const FlowShape>;
  Shape make_shape(std::span<const std::uint32_t> links,
                   std::span<const std::uint32_t> member_begin) const;
  FlowId start_shape(const Shape& shape, double bytes, GroupDone done, double multiplicity = 1.0,
                     double rate_cap_Bps = std::numeric_limits<double>::infinity());

  // Current rate of an active flow, bytes per second (per member when multiplicity > 1).
  double rate(FlowId id) const;
  bool active(FlowId id) const;
  std::size_t active_flows() const;

  // Counters for benchmarks and tests: flows started (a class counts once), flows whose rate
  // was recomputed in total, solves, classes split into single flows, and solves answered by
  // the solution of an earlier component of the same shapes (counted as solves too).
  std::uint64_t flows_started() const;
  std::uint64_t rate_recomputations() const;
  std::uint64_t solves() const;
  std::uint64_t classes_split() const;
  std::uint64_t solutions_reused() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wallsim
