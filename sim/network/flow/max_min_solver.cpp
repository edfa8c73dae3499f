#include "sim/network/flow/max_min_solver.hpp"

#include <algorithm>
#include <cassert>

namespace wallsim {

void MaxMinProblem::clear() {
  capacity_Bps.clear();
  weight.clear();
  cap_Bps.clear();
  link_begin.assign(1, 0);
  link_index.clear();
  crossings.clear();
}

std::uint32_t MaxMinProblem::add_link(double capacity) {
  capacity_Bps.push_back(capacity);
  return static_cast<std::uint32_t>(capacity_Bps.size() - 1);
}

std::uint32_t MaxMinProblem::add_flow(std::span<const std::uint32_t> links, double flow_weight,
                                      double rate_cap_Bps) {
  assert(!links.empty() && flow_weight > 0);
  weight.push_back(flow_weight);
  cap_Bps.push_back(rate_cap_Bps);
  link_index.insert(link_index.end(), links.begin(), links.end());
  crossings.resize(link_index.size(), 1.0);
  link_begin.push_back(static_cast<std::uint32_t>(link_index.size()));
  return static_cast<std::uint32_t>(weight.size() - 1);
}

std::uint32_t MaxMinProblem::add_flow(std::span<const std::uint32_t> links,
                                      std::span<const double> crossing_counts, double flow_weight,
                                      double rate_cap_Bps) {
  assert(links.size() == crossing_counts.size());
  const std::uint32_t flow = add_flow(links, flow_weight, rate_cap_Bps);
  std::copy(crossing_counts.begin(), crossing_counts.end(), crossings.end() - links.size());
  return flow;
}

// std heaps are max-heaps; "later" events sink, so the top is the earliest.
bool MaxMinSolver::Later::operator()(const Event& a, const Event& b) const {
  if (a.level_Bps != b.level_Bps) return a.level_Bps > b.level_Bps;
  if (a.kind != b.kind) return a.kind > b.kind;
  return a.index > b.index;
}

void MaxMinSolver::push(Event event) {
  heap_.push_back(event);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

// A link's saturation level never falls below the current level (see the header); clamping
// to `floor_Bps` only absorbs rounding.
double MaxMinSolver::link_level(std::uint32_t link, double floor_Bps) const {
  return std::max(free_Bps_[link] / unfrozen_weight_[link], floor_Bps);
}

// Counting sort of (link, flow) entries by link: entries of a link in increasing flow index.
// flow_index_ holds entry numbers k (the flow is entry_flow_[k], its count crossings[k]).
void MaxMinSolver::index_flows_by_link(const MaxMinProblem& problem) {
  const std::size_t links = problem.num_links();
  flow_begin_.assign(links + 1, 0);
  for (std::uint32_t link : problem.link_index) ++flow_begin_[link + 1];
  for (std::size_t l = 0; l < links; ++l) flow_begin_[l + 1] += flow_begin_[l];
  flow_index_.resize(problem.link_index.size());
  std::vector<std::uint32_t>& cursor = unfrozen_count_;  // reused; reset_links overwrites it
  cursor.assign(flow_begin_.begin(), flow_begin_.end() - 1);
  entry_flow_.resize(problem.link_index.size());
  for (std::uint32_t f = 0; f < problem.num_flows(); ++f) {
    for (auto k = problem.link_begin[f]; k < problem.link_begin[f + 1]; ++k) {
      flow_index_[cursor[problem.link_index[k]]++] = k;
      entry_flow_[k] = f;
    }
  }
}

void MaxMinSolver::reset_links(const MaxMinProblem& problem) {
  const std::size_t links = problem.num_links();
  free_Bps_.assign(problem.capacity_Bps.begin(), problem.capacity_Bps.end());
  unfrozen_weight_.assign(links, 0.0);
  unfrozen_count_.assign(links, 0);
  for (std::size_t l = 0; l < links; ++l) {
    for (auto i = flow_begin_[l]; i < flow_begin_[l + 1]; ++i) {
      const std::uint32_t k = flow_index_[i];
      unfrozen_weight_[l] += problem.weight[entry_flow_[k]] * problem.crossings[k];
    }
    unfrozen_count_[l] = flow_begin_[l + 1] - flow_begin_[l];
  }
}

void MaxMinSolver::freeze(const MaxMinProblem& problem, std::uint32_t flow, double rate_Bps,
                          std::vector<double>& rates_Bps) {
  frozen_[flow] = true;
  --unfrozen_flows_;
  rates_Bps[flow] = rate_Bps;
  const double weight = problem.weight[flow];
  for (auto k = problem.link_begin[flow]; k < problem.link_begin[flow + 1]; ++k) {
    const std::uint32_t link = problem.link_index[k];
    const double load = weight * problem.crossings[k];
    free_Bps_[link] = std::max(0.0, free_Bps_[link] - load * rate_Bps);
    unfrozen_weight_[link] -= load;
    --unfrozen_count_[link];
  }
}

void MaxMinSolver::solve(const MaxMinProblem& problem, std::vector<double>& rates_Bps) {
  rates_Bps.assign(problem.num_flows(), 0.0);
  frozen_.assign(problem.num_flows(), false);
  heap_.clear();
  index_flows_by_link(problem);
  reset_links(problem);
  for (std::uint32_t l = 0; l < problem.num_links(); ++l) {
    if (unfrozen_count_[l] > 0) heap_.push_back(Event{link_level(l, 0.0), kLinkSaturates, l});
  }
  for (std::uint32_t f = 0; f < problem.num_flows(); ++f) {
    if (problem.cap_Bps[f] < std::numeric_limits<double>::infinity()) {
      heap_.push_back(Event{problem.cap_Bps[f], kFlowCapped, f});
    }
  }
  std::make_heap(heap_.begin(), heap_.end(), Later{});
  // Events pop in the total order (level, kind, index) whatever the heap's layout, and the
  // links left once every flow is frozen cannot change a rate.
  unfrozen_flows_ = problem.num_flows();
  while (!heap_.empty() && unfrozen_flows_ > 0) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const Event event = heap_.back();
    heap_.pop_back();
    if (event.kind == kFlowCapped) {
      if (!frozen_[event.index]) freeze(problem, event.index, event.level_Bps, rates_Bps);
      continue;
    }
    // A link's key is a lower bound of its level (levels only rise as flows freeze). If the
    // level rose since the key was pushed, the link goes back with its true level; otherwise
    // nothing can saturate earlier, since every other key is a lower bound too.
    const std::uint32_t link = event.index;
    if (unfrozen_count_[link] == 0) continue;
    const double level = link_level(link, event.level_Bps);
    if (level > event.level_Bps) {
      push(Event{level, kLinkSaturates, link});
      continue;
    }
    for (auto i = flow_begin_[link]; i < flow_begin_[link + 1]; ++i) {
      const std::uint32_t flow = entry_flow_[flow_index_[i]];
      if (!frozen_[flow]) freeze(problem, flow, event.level_Bps, rates_Bps);
    }
  }
}

}  // namespace wallsim
