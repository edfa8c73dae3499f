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
// Rates change only when a flow starts or ends, and only for the flows connected to it
// through shared links (the affected component); others keep their rates and completion
// events. A flow's completion is an Engine event, rescheduled when its rate changes.
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

class FlowNetwork {
 public:
  using Done = std::function<void()>;

  FlowNetwork(Engine& engine, std::vector<double> link_capacity_Bps);
  ~FlowNetwork();
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  // Starts a flow of `bytes` over `links` now; `done` runs (as an engine event) when the last
  // byte has arrived. A flow with no links, or zero bytes, completes at the current time.
  FlowId start(std::span<const std::uint32_t> links, double bytes, Done done,
               double multiplicity = 1.0,
               double rate_cap_Bps = std::numeric_limits<double>::infinity());

  // Current rate of an active flow, bytes per second (per member when multiplicity > 1).
  double rate(FlowId id) const;
  bool active(FlowId id) const;
  std::size_t active_flows() const;

  // Counters for benchmarks: flows started, and flows whose rate was recomputed in total.
  std::uint64_t flows_started() const;
  std::uint64_t rate_recomputations() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace wallsim
