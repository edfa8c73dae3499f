// The settle of an instant: the component that the changes touched, its max-min problem (equal
// links merged, classes whole or member by member), the solve and the class check.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "sim/network/flow/flow_network_state.hpp"

namespace wallsim {

using namespace flow_internal;  // this file implements what flow_network_state.hpp declares

// Breadth-first search over link -> flows -> links from the dirty links: the flows whose rates
// can depend on what changed. Flows are sorted by id so the solver sees them in an order that
// does not depend on how crossings were added and removed; links stay in BFS order, which
// follows from the flow order and the seeds. Returns false, unsorted, as soon as the component
// has more than `max_flows` flows.
bool FlowNetwork::State::collect_component(std::size_t max_flows) {
  ++visit_stamp;
  component_links.clear();
  component_flows.clear();
  for (std::uint32_t link : dirty_links) {
    if (link_visit[link] == visit_stamp) continue;
    link_visit[link] = visit_stamp;
    component_links.push_back(link);
  }
  for (std::size_t next = 0; next < component_links.size(); ++next) {
    for (const Crossing& crossing : links[component_links[next]].crossings) {
      if (flow_visit[crossing.flow_slot] == visit_stamp) continue;
      flow_visit[crossing.flow_slot] = visit_stamp;
      component_flows.push_back(crossing.flow_slot);
      if (component_flows.size() > max_flows) return false;
      for (std::uint32_t link : flows[crossing.flow_slot].links()) {
        if (link_visit[link] == visit_stamp) continue;
        link_visit[link] = visit_stamp;
        component_links.push_back(link);
      }
    }
  }
  std::sort(component_flows.begin(), component_flows.end(),
            [this](std::uint32_t a, std::uint32_t b) { return flows[a].id < flows[b].id; });
  return true;
}

// Whether this solve merges equal links: not while a class is solved member by member, not for
// small components (below a few hundred crossings the solve costs less than signing every
// link), and not while backing off after merges that found little.
bool FlowNetwork::State::merge_decision() const {
  constexpr std::size_t kMergeFromEntries = 128;
  std::size_t entries = 0;
  for (std::uint32_t slot : component_flows) {
    if (flows[slot].expanded) return false;
    entries += flows[slot].links().size();
  }
  return entries >= kMergeFromEntries && merge_skipped >= merge_backoff;
}

// Backs off merging for the next settles when it merged fewer than one link in eight.
void FlowNetwork::State::note_merge(bool merged, std::size_t problem_links) {
  if (!merged) {
    ++merge_skipped;
    return;
  }
  const bool paid_off = 8 * problem_links < 7 * component_links.size();
  merge_backoff = paid_off ? 0 : std::min<std::uint32_t>(2 * merge_backoff + 1, 64);
  merge_skipped = 0;
}

void FlowNetwork::State::build_problem(bool try_merge) {
  problem.clear();
  for (std::uint32_t i = 0; i < component_flows.size(); ++i) flows[component_flows[i]].local = i;
  add_links(try_merge);
  note_merge(try_merge, problem.num_links());
  problem_slot.clear();
  problem_member.clear();
  for (std::uint32_t slot : component_flows) {
    const FlowState& flow = flows[slot];
    if (flow.expanded) {
      for (std::uint32_t m = 0; m < flow.members(); ++m) {
        add_member(flow, m);
        problem_slot.push_back(slot);
        problem_member.push_back(m);
      }
      continue;
    }
    local_path.clear();
    const auto path = flow.links();
    if (problem.num_links() == component_links.size()) {  // nothing merged
      for (std::uint32_t link : path) local_path.push_back(links[link].local);
      problem.add_flow(local_path, flow.shape->crossings, flow.multiplicity, flow.cap_Bps);
      problem_slot.push_back(slot);
      problem_member.push_back(kWholeFlow);
      continue;
    }
    // Links merged into one problem link are one constraint: the flow crosses it once.
    member_crossings.clear();
    for (std::size_t k = 0; k < path.size(); ++k) {
      const std::uint32_t local = links[path[k]].local;
      if (problem_link_stamp[local] == slot + 1) continue;
      problem_link_stamp[local] = slot + 1;
      local_path.push_back(local);
      member_crossings.push_back(flow.shape->crossings[k]);
    }
    for (std::uint32_t local : local_path) problem_link_stamp[local] = 0;
    problem.add_flow(local_path, member_crossings, flow.multiplicity, flow.cap_Bps);
    problem_slot.push_back(slot);
    problem_member.push_back(kWholeFlow);
  }
}

// Problem links for the component's links. Links with the same capacity crossed by the same
// flows the same number of times are the same constraint at every level of the progressive
// filling (same capacity, same frozen load, same unfrozen weight): they become one problem
// link, so a collective's hundreds of symmetric links cost the solver a few. Not while a class
// is solved member by member (its members' crossings are not in the link lists).
void FlowNetwork::State::add_links(bool merge_equal) {
  const auto n = static_cast<std::uint32_t>(component_links.size());
  if (!merge_equal) {
    for (std::uint32_t link : component_links) {
      links[link].local = problem.add_link(links[link].capacity_Bps);
    }
    problem_link_stamp.assign(problem.num_links(), 0);
    return;
  }
  // Open addressing over (hash, component link), a power-of-two table at most half full,
  // emptied by a new stamp instead of clearing; the first link of each signature (in BFS
  // order) is its representative.
  std::size_t size = 16;
  while (size < 2 * std::size_t{n}) size *= 2;
  if (table.size() < size) table.assign(size, TableSlot{});
  const std::size_t mask = size - 1;
  ++table_stamp;
  signature.clear();
  signature_begin.assign(1, 0);
  auto same = [&](std::uint32_t i, std::uint32_t j) {
    const auto a = std::span(signature).subspan(signature_begin[i],
                                                signature_begin[i + 1] - signature_begin[i]);
    const auto b = std::span(signature).subspan(signature_begin[j],
                                                signature_begin[j + 1] - signature_begin[j]);
    return links[component_links[i]].capacity_Bps == links[component_links[j]].capacity_Bps &&
           std::equal(a.begin(), a.end(), b.begin(), b.end());
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t link = component_links[i];
    const std::uint64_t hash = sign_link(link);
    std::optional<std::uint32_t> found;
    std::size_t at = hash & mask;
    for (; table[at].stamp == table_stamp; at = (at + 1) & mask) {
      if (table[at].hash == hash && same(i, table[at].index)) {
        found = table[at].index;
        break;
      }
    }
    if (found) {
      links[link].local = links[component_links[*found]].local;
    } else {
      table[at] = TableSlot{hash, i, table_stamp};
      links[link].local = problem.add_link(links[link].capacity_Bps);
    }
  }
  problem_link_stamp.assign(problem.num_links(), 0);
}

// Appends the link's sorted (component flow, crossings) pairs to `signature`; returns their
// hash with the capacity's.
std::uint64_t FlowNetwork::State::sign_link(std::uint32_t link) {
  const std::size_t begin = signature.size();
  for (const Crossing& crossing : links[link].crossings) {
    const FlowState& flow = flows[crossing.flow_slot];
    signature.emplace_back(flow.local, flow.shape->crossings[crossing.hop]);
  }
  std::sort(signature.begin() + static_cast<std::ptrdiff_t>(begin), signature.end());
  signature_begin.push_back(signature.size());
  std::uint64_t hash;
  std::memcpy(&hash, &links[link].capacity_Bps, sizeof hash);
  for (std::size_t k = begin; k < signature.size(); ++k) {
    std::uint64_t count;
    std::memcpy(&count, &signature[k].second, sizeof count);
    hash = (hash ^ signature[k].first) * 0x9e3779b97f4a7c15ULL;
    hash = (hash ^ count) * 0x9e3779b97f4a7c15ULL;
    hash ^= hash >> 29;
  }
  return hash;
}

// One member of a class as a flow of its own, its route compressed on the fly.
void FlowNetwork::State::add_member(const FlowState& flow, std::uint32_t member) {
  const FlowShape& shape = *flow.shape;
  local_path.clear();
  member_crossings.clear();
  for (auto i = shape.member_begin[member]; i < shape.member_begin[member + 1]; ++i) {
    const std::uint32_t link = shape.member_links[i];
    if (compress_index[link] == kNoIndex) {
      compress_index[link] = static_cast<std::uint32_t>(local_path.size());
      local_path.push_back(links[link].local);
      member_crossings.push_back(0.0);
    }
    member_crossings[compress_index[link]] += 1.0;
  }
  for (auto i = shape.member_begin[member]; i < shape.member_begin[member + 1]; ++i) {
    compress_index[shape.member_links[i]] = kNoIndex;
  }
  problem.add_flow(local_path, member_crossings, flow.multiplicity, flow.cap_Bps);
}

// The one solve of this instant, over every component that a start or an end touched; again,
// member by member, for any class whose members the solution does not serve alike. A large
// component is first settled locally (flow_local_settle.cpp), and whole only when that fails.
void FlowNetwork::State::settle() {
  if (dirty_links.empty()) return;
  if (!collect_component(kLocalSettleFrom)) {
    // Where changes spread through most of the component (dense random traffic), local
    // settles fail and only add their rounds to the whole solve: after a failure the next
    // settles go straight to it, for twice as many each time, up to 64.
    const bool try_local = local_skipped >= local_backoff;
    if (try_local && settle_local()) {
      local_backoff = 0;
      local_skipped = 0;
      dirty_links.clear();
      arm_wakeup();
      return;
    }
    if (try_local) {
      local_backoff = std::min<std::uint32_t>(2 * local_backoff + 1, 64);
      local_skipped = 0;
    } else {
      ++local_skipped;
    }
    collect_component(std::numeric_limits<std::size_t>::max());
  }
  dirty_links.clear();
  if (component_flows.empty()) return;
  if (component_flows.size() == 1 && flows[component_flows.front()].members() == 1) {
    settle_alone(component_flows.front());
    return;
  }
  order_component_links();
  bool try_merge = merge_decision();
  if (reuse_solution(try_merge)) return;
  for (bool first = true;; first = false) {
    build_problem(try_merge);
    solver.solve(problem, rates_Bps);
    ++solved;
    recomputed += component_flows.size();
    if (classes_hold()) {
      if (first) keep_solution(try_merge);
      break;
    }
    try_merge = merge_decision();
  }
  for (std::uint32_t slot : component_flows) flows[slot].bottleneck_hop = kNoIndex;
  const auto solved_flows = static_cast<std::uint32_t>(problem.num_flows());
  for (std::uint32_t p = 0; p < solved_flows; ++p) {
    if (problem_member[p] == kWholeFlow) apply_rate(problem_slot[p], rates_Bps[p]);
  }
  for (std::uint32_t first = 0, last; first < solved_flows; first = last) {
    last = first + 1;
    if (problem_member[first] == kWholeFlow) continue;
    while (last < solved_flows && problem_slot[last] == problem_slot[first]) ++last;
    resolve_expanded(problem_slot[first], first, last);
  }
  arm_wakeup();
}

// A flow alone in its component: progressive filling freezes it at its cap or at its tightest
// link's level C / (weight · crossings), whichever comes first (the same quotients the solver
// forms, so the same rate to the bit).
void FlowNetwork::State::settle_alone(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  flow.bottleneck_hop = kNoIndex;
  double rate = flow.cap_Bps;
  const auto path = flow.links();
  for (std::size_t k = 0; k < path.size(); ++k) {
    const double unfrozen_weight = 0.0 + flow.multiplicity * flow.shape->crossings[k];
    rate = std::min(rate, links[path[k]].capacity_Bps / unfrozen_weight);
  }
  ++solved;
  ++recomputed;
  apply_rate(slot, rate);
  arm_wakeup();
}

// Checks every class flow of the solved component (header: each member needs a bottleneck of
// its own); splits those that fail and returns false when any did.
bool FlowNetwork::State::classes_hold() {
  bool any_class = false;
  for (std::uint32_t p = 0; p < problem.num_flows(); ++p) {
    any_class |= problem_member[p] == kWholeFlow && flows[problem_slot[p]].members() > 1;
  }
  if (!any_class) return true;
  const std::size_t n = problem.num_links();
  link_load_Bps.assign(n, 0.0);
  link_max_rate_Bps.assign(n, 0.0);
  for (std::uint32_t f = 0; f < problem.num_flows(); ++f) {
    for (auto k = problem.link_begin[f]; k < problem.link_begin[f + 1]; ++k) {
      const std::uint32_t link = problem.link_index[k];
      link_load_Bps[link] += problem.weight[f] * problem.crossings[k] * rates_Bps[f];
      link_max_rate_Bps[link] = std::max(link_max_rate_Bps[link], rates_Bps[f]);
    }
  }
  bool hold = true;
  for (std::uint32_t p = 0; p < problem.num_flows(); ++p) {
    FlowState& flow = flows[problem_slot[p]];
    if (problem_member[p] != kWholeFlow || flow.members() < 2) continue;
    if (!members_have_bottlenecks(p)) {
      flow.expanded = true;
      hold = false;
    }
  }
  return hold;
}

bool FlowNetwork::State::members_have_bottlenecks(std::uint32_t problem_flow) {
  FlowState& flow = flows[problem_slot[problem_flow]];
  const FlowShape& shape = *flow.shape;
  const double rate = rates_Bps[problem_flow];
  if (rate >= flow.cap_Bps * (1 - kCheckTolerance)) return true;
  // Which of the class's links would be a bottleneck for a member crossing it.
  bottleneck_for.assign(shape.links.size(), false);
  bool any = false;
  for (std::size_t k = 0; k < shape.links.size(); ++k) {
    const std::uint32_t local = links[shape.links[k]].local;
    const bool saturated =
        link_load_Bps[local] >= problem.capacity_Bps[local] * (1 - kCheckTolerance);
    bottleneck_for[k] = saturated && link_max_rate_Bps[local] <= rate * (1 + kCheckTolerance);
    any |= bottleneck_for[k];
  }
  return any && every_member_has_bottleneck(flow);
}

// Whether each member of the flow crosses a link marked in bottleneck_for (indexed like the
// shape's distinct links); a single flow is its one member.
bool FlowNetwork::State::every_member_has_bottleneck(FlowState& flow) {
  const FlowShape& shape = *flow.shape;
  if (shape.members() == 1) return true;
  if (flow.witness.size() != shape.members()) flow.witness.assign(shape.members(), 0);
  for (std::size_t m = 0; m < shape.members(); ++m) {
    std::uint32_t& witness = flow.witness[m];
    if (witness >= shape.member_begin[m] && witness < shape.member_begin[m + 1] &&
        bottleneck_for[shape.member_entry[witness]]) {
      continue;
    }
    bool found = false;
    for (auto i = shape.member_begin[m]; !found && i < shape.member_begin[m + 1]; ++i) {
      found = bottleneck_for[shape.member_entry[i]];
      if (found) witness = i;
    }
    if (!found) return false;
  }
  return true;
}

// A class solved member by member (problem flows [first, last)): members of equal rate stay
// together as a class (their bytes left are equal: they were one flow until now), each group a
// flow of its own from now on. Loads and rates stay as solved, so nothing is re-solved; the
// next solve checks the new classes like any other.
void FlowNetwork::State::resolve_expanded(std::uint32_t slot, std::uint32_t first,
                                          std::uint32_t last) {
  std::vector<std::uint32_t> order(last - first);
  std::iota(order.begin(), order.end(), 0u);
  auto rate_of = [&](std::uint32_t m) { return rates_Bps[first + m]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return rate_of(a) < rate_of(b); });
  FlowState& flow = flows[slot];
  flow.expanded = false;
  if (rate_of(order.front()) == rate_of(order.back())) {
    apply_rate(slot, rate_of(order.front()));
    return;
  }
  const Time now = engine.now();
  const double remaining =
      std::max(0.0, flow.remaining_bytes - flow.rate_Bps * (now - flow.updated_at).seconds());
  const Shape shape = flow.shape;
  const GroupDone done = flow.group_done;
  const double multiplicity = flow.multiplicity, cap = flow.cap_Bps;
  remove(slot);
  ++split;
  for (std::size_t begin = 0, end; begin < order.size(); begin = end) {
    end = begin + 1;
    while (end < order.size() && rate_of(order[end]) == rate_of(order[begin])) ++end;
    const auto members = std::span(order).subspan(begin, end - begin);
    const std::uint32_t part =
        new_flow(member_shape(*shape, members), remaining, multiplicity, cap);
    flows[part].group_done = done;
    apply_rate(part, rate_of(members.front()));
  }
}

}  // namespace wallsim
