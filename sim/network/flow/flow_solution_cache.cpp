// Solutions of whole components, kept for the next component of the same flows. A layer's
// collectives repeat thousands of times per step (every layer, every micro-batch), and each
// time their class flows form the same component: the same prepared shapes, multiplicities and
// caps. The max-min problem of a component is a function of exactly those (its links are the
// union of the shapes' links, in the order the flows, sorted by id, first cross them; link
// capacities never change) and of whether equal links are merged, and the solver is
// deterministic, so the rates of an earlier solve of an equal problem are the rates this one
// would compute, to the bit. Only components whose classes all held are kept (a class solved
// member by member changes the flows), and only of shapes that a prepared collective shares
// (a shape made for one start cannot come back).
#include <algorithm>
#include <bit>

#include "sim/network/flow/flow_network_state.hpp"

namespace wallsim {

using namespace flow_internal;  // this file implements what flow_network_state.hpp declares

namespace {

// Past this many kept solutions the cache starts again (a step has a few hundred distinct
// components; a run that makes more does not repeat them).
constexpr std::size_t kMaxSolutions = 4096;

std::uint64_t mix(std::uint64_t hash, std::uint64_t value) {
  hash = (hash ^ value) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}

}  // namespace

// The component's links in the order its flows (by id) first cross them: a function of the
// flows alone, whatever links the search started from.
void FlowNetwork::State::order_component_links() {
  ++visit_stamp;
  component_links.clear();
  for (std::uint32_t slot : component_flows) {
    for (std::uint32_t link : flows[slot].links()) {
      if (link_visit[link] == visit_stamp) continue;
      link_visit[link] = visit_stamp;
      component_links.push_back(link);
    }
  }
}

std::uint64_t FlowNetwork::State::component_key(bool merged) const {
  std::uint64_t hash = merged ? 1 : 2;
  for (std::uint32_t slot : component_flows) {
    const FlowState& flow = flows[slot];
    hash = mix(hash, reinterpret_cast<std::uintptr_t>(flow.shape.get()));
    hash = mix(hash, std::bit_cast<std::uint64_t>(flow.multiplicity));
    hash = mix(hash, std::bit_cast<std::uint64_t>(flow.cap_Bps));
  }
  return hash;
}

bool FlowNetwork::State::reuse_solution(bool merged) {
  const auto found = solutions.find(component_key(merged));
  if (found == solutions.end()) return false;
  const Solution& solution = found->second;
  if (solution.merged != merged || solution.shapes.size() != component_flows.size()) return false;
  for (std::size_t i = 0; i < component_flows.size(); ++i) {
    const FlowState& flow = flows[component_flows[i]];
    if (flow.expanded || flow.shape != solution.shapes[i] ||
        flow.multiplicity != solution.multiplicity[i] || flow.cap_Bps != solution.cap_Bps[i]) {
      return false;
    }
  }
  note_merge(merged, solution.problem_links);
  ++reused;
  ++solved;
  recomputed += component_flows.size();
  for (std::size_t i = 0; i < component_flows.size(); ++i) {
    flows[component_flows[i]].bottleneck_hop = kNoIndex;
    apply_rate(component_flows[i], solution.rates_Bps[i]);
  }
  arm_wakeup();
  return true;
}

// After a solve in which every class held: the problem flows are the component's flows.
void FlowNetwork::State::keep_solution(bool merged) {
  for (std::uint32_t slot : component_flows) {
    if (flows[slot].shape.use_count() < 2) return;  // not a prepared collective's shape
  }
  if (solutions.size() >= kMaxSolutions) solutions.clear();
  Solution& solution = solutions[component_key(merged)];
  solution.merged = merged;
  solution.problem_links = problem.num_links();
  solution.shapes.clear();
  solution.multiplicity.clear();
  solution.cap_Bps.clear();
  for (std::uint32_t slot : component_flows) {
    solution.shapes.push_back(flows[slot].shape);
    solution.multiplicity.push_back(flows[slot].multiplicity);
    solution.cap_Bps.push_back(flows[slot].cap_Bps);
  }
  solution.rates_Bps.assign(rates_Bps.begin(), rates_Bps.begin() + component_flows.size());
}

}  // namespace wallsim
