// Local settles. In a component of thousands of flows (permutation traffic, a large all-to-all
// whose classes split) one start or end usually moves the rates of a few dozen flows, yet a
// whole solve re-solves them all. A local settle solves a *region* instead, with every other
// flow held at its rate (its load taken off the capacity of the region's links), and keeps the
// result only if it is the max-min allocation of the whole network.
//
// Why the check suffices. Loads stay within capacities by construction (the held loads are
// subtracted and the region is solved within what is left), and a feasible allocation is the
// unique max-min fair one if and only if every flow is at its cap or has a bottleneck: a
// saturated link on which no flow is faster (Bertsekas & Gallager, "Data Networks", §6.5.2).
// The last settle left every flow with one. A held flow keeps its rate, so it still has its
// bottleneck unless that link is in the region; the region's links that were saturated before
// are the only ones that can have been anyone's bottleneck and have changed. So the check looks
// at the region's flows and at the held flows on those links, each member of a class on its
// own route. A single flow remembers the hop where its bottleneck was found (or not, after a
// whole solve), which lets most held flows pass without looking at their links.
//
// The region starts with the new flows and the flows whose bottleneck was a changed link (or is
// not known). Flows that fail the check join it; a region flow that fails brings the flows on
// its links (one of them holds capacity it should get, or is faster on its bottleneck); and the
// region is solved again. A region that grows past kLocalRegionLimit flows, needs more than
// kLocalRounds rounds or stops growing (a class whose members need different rates) gives up,
// and the component is solved whole. Rates agree with a whole solve to the check's tolerance
// (kCheckTolerance, 1e-9 relative), not to the bit. Each link's load at the current rates is
// kept as rates change (LinkLoad), so holding a link's other flows costs nothing per settle.
#include <algorithm>

#include "sim/network/flow/flow_network_state.hpp"

namespace wallsim {

using namespace flow_internal;  // this file implements what flow_network_state.hpp declares

namespace {

// Past this many flows a region costs about what a whole component of thousands does.
constexpr std::size_t kLocalRegionLimit = 1024;
constexpr int kLocalRounds = 8;

}  // namespace

bool FlowNetwork::State::settle_local() {
  keep_loads();
  ++region_stamp;
  region.clear();
  std::sort(dirty_links.begin(), dirty_links.end());
  dirty_links.erase(std::unique(dirty_links.begin(), dirty_links.end()), dirty_links.end());
  // The flows a change reaches first: new ones, and those whose bottleneck was a changed link.
  for (std::uint32_t link : dirty_links) {
    for (const Crossing& crossing : links[link].crossings) {
      const FlowState& flow = flows[crossing.flow_slot];
      if (!flow.due || flow.bottleneck_hop == kNoIndex || flow.bottleneck_hop == crossing.hop) {
        add_to_region(crossing.flow_slot);
      }
    }
  }
  for (int round = 0; round < kLocalRounds && region.size() <= kLocalRegionLimit; ++round) {
    std::sort(region.begin(), region.end(),
              [this](std::uint32_t a, std::uint32_t b) { return flows[a].id < flows[b].id; });
    build_local_problem();
    rates_Bps.clear();
    if (!region.empty()) {
      solver.solve(problem, rates_Bps);
      ++solved;
      recomputed += region.size();
    }
    if (check_region()) {
      for (std::uint32_t i = 0; i < region.size(); ++i) apply_rate(region[i], rates_Bps[i]);
      return true;
    }
    const std::size_t before = region.size();
    for (std::uint32_t slot : failing) {
      if (flows[slot].region != region_stamp) {
        add_to_region(slot);
        continue;
      }
      for (std::uint32_t link : flows[slot].links()) {
        for (const Crossing& crossing : links[link].crossings) add_to_region(crossing.flow_slot);
      }
    }
    if (region.size() == before) return false;
  }
  return false;
}

void FlowNetwork::State::add_to_region(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  if (flow.region == region_stamp) return;
  flow.region = region_stamp;
  region.push_back(slot);
}

// The region's flows on the region's links, each link's capacity less the load of the flows
// held at their rates (the link's running load less the region's part of it).
void FlowNetwork::State::build_local_problem() {
  problem.clear();
  ++visit_stamp;
  region_links.clear();
  for (std::uint32_t i = 0; i < region.size(); ++i) flows[region[i]].local = i;
  for (std::uint32_t slot : region) {
    for (std::uint32_t link : flows[slot].links()) {
      if (link_visit[link] == visit_stamp) continue;
      link_visit[link] = visit_stamp;
      loads[link].held_Bps = loads[link].load_Bps;
      region_links.push_back(link);
    }
  }
  for (std::uint32_t slot : region) {
    const FlowState& flow = flows[slot];
    const auto path = flow.links();
    for (std::size_t k = 0; k < path.size(); ++k) {
      loads[path[k]].held_Bps -= flow.multiplicity * flow.shape->crossings[k] * flow.rate_Bps;
    }
  }
  for (std::uint32_t link : region_links) {
    LinkState& state = links[link];
    state.local = problem.add_link(std::max(0.0, state.capacity_Bps - loads[link].held_Bps));
  }
  // Changed links are looked at like region links, whether or not a region flow crosses them.
  for (std::uint32_t link : dirty_links) link_visit[link] = visit_stamp;
  for (std::uint32_t slot : region) {
    const FlowState& flow = flows[slot];
    local_path.clear();
    for (std::uint32_t link : flow.links()) local_path.push_back(links[link].local);
    problem.add_flow(local_path, flow.shape->crossings, flow.multiplicity, flow.cap_Bps);
  }
}

// Checks the region's flows and the held flows that may have lost their bottleneck under the
// region's new rates; the ones without a bottleneck go to `failing`. Returns true when none did.
bool FlowNetwork::State::check_region() {
  ++check_stamp;
  ++stats_stamp;
  failing.clear();
  for (std::uint32_t link : region_links) {
    LinkLoad& load = loads[link];
    load.stats = stats_stamp;
    load.new_Bps = load.held_Bps;
  }
  for (std::uint32_t i = 0; i < region.size(); ++i) {
    const FlowState& flow = flows[region[i]];
    const auto path = flow.links();
    for (std::size_t k = 0; k < path.size(); ++k) {
      loads[path[k]].new_Bps += flow.multiplicity * flow.shape->crossings[k] * rates_Bps[i];
    }
  }
  auto check = [&](std::uint32_t slot) {
    FlowState& flow = flows[slot];
    if (flow.checked == check_stamp) return;
    flow.checked = check_stamp;
    if (!has_bottleneck(slot)) failing.push_back(slot);
  };
  for (std::uint32_t slot : region) check(slot);
  // A held flow kept its rate; it lost its bottleneck only if that was a region link, and a
  // bottleneck was saturated (links changed only by the removal of flows have no held flows
  // bottlenecked on them: those are in the region from the start).
  for (std::uint32_t link : region_links) {
    if (loads[link].load_Bps < links[link].capacity_Bps * (1 - kCheckTolerance)) continue;
    for (const Crossing& crossing : links[link].crossings) check(crossing.flow_slot);
  }
  return failing.empty();
}

// A flow held at its rate whose last bottleneck is off the region still has it: no rate on
// that link moved. Otherwise each link of its route is looked at under the tentative rates.
bool FlowNetwork::State::has_bottleneck(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  const auto path = flow.links();
  const bool held = flow.region != region_stamp;
  if (held && flow.bottleneck_hop != kNoIndex &&
      link_visit[path[flow.bottleneck_hop]] != visit_stamp) {
    return true;
  }
  const double rate = tentative_rate(flow);
  if (rate >= flow.cap_Bps * (1 - kCheckTolerance)) return true;
  if (flow.members() == 1) {
    for (std::uint32_t k = 0; k < path.size(); ++k) {
      if (is_bottleneck(path[k], rate)) {
        flow.bottleneck_hop = k;
        return true;
      }
    }
    return false;
  }
  bottleneck_for.assign(path.size(), false);
  bool any = false;
  for (std::size_t k = 0; k < path.size(); ++k) {
    bottleneck_for[k] = is_bottleneck(path[k], rate);
    any |= bottleneck_for[k];
  }
  return any && every_member_has_bottleneck(flow);
}

double FlowNetwork::State::tentative_rate(const FlowState& flow) const {
  return flow.region == region_stamp ? rates_Bps[flow.local] : flow.rate_Bps;
}

// Whether the link is saturated under the tentative rates and no flow on it is faster than
// `rate_Bps`; the fastest rate is found once per check, and only on saturated links.
bool FlowNetwork::State::is_bottleneck(std::uint32_t link, double rate_Bps) {
  LinkLoad& load = loads[link];
  const double load_Bps = load.stats == stats_stamp ? load.new_Bps : load.load_Bps;
  if (load_Bps < links[link].capacity_Bps * (1 - kCheckTolerance)) return false;
  if (load.max_stats != stats_stamp) {
    load.max_stats = stats_stamp;
    load.max_rate_Bps = 0;
    for (const Crossing& crossing : links[link].crossings) {
      load.max_rate_Bps = std::max(load.max_rate_Bps, tentative_rate(flows[crossing.flow_slot]));
    }
  }
  return load.max_rate_Bps <= rate_Bps * (1 + kCheckTolerance);
}

}  // namespace wallsim
