#include "sim/network/collective/collective_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "sim/core/input_error.hpp"

namespace wallsim {

GroupLayout layout_group(const Topology& topology, const std::vector<int>& ranks) {
  if (ranks.size() < 2) {
    throw InputError("command line", "--group", std::to_string(ranks.size()) + " rank(s)",
                     "a collective needs at least 2 ranks");
  }
  std::map<int, std::vector<int>> by_domain;
  std::set<int> seen;
  for (int rank : ranks) {
    if (rank < 0 || rank >= topology.num_gpus()) {
      throw InputError(
          "command line", "--group", std::to_string(rank),
          "rank outside the cluster (valid: 0.." + std::to_string(topology.num_gpus() - 1) + ")");
    }
    if (!seen.insert(rank).second) {
      throw InputError("command line", "--group", std::to_string(rank), "rank listed twice");
    }
    by_domain[topology.domain_of(rank)].push_back(rank);
  }
  GroupLayout layout;
  layout.ranks = static_cast<int>(ranks.size());
  for (auto& [domain, members] : by_domain) {
    std::sort(members.begin(), members.end());
    layout.by_domain.push_back(std::move(members));
  }
  layout.per_domain = static_cast<int>(layout.by_domain.front().size());
  for (const auto& members : layout.by_domain) {
    if (static_cast<int>(members.size()) != layout.per_domain) layout.per_domain = 0;
  }
  return layout;
}

Time contention_free_time(const CollectivePlan& plan, const std::vector<double>& capacity_Bps) {
  std::vector<double> load(capacity_Bps.size(), 0.0);
  std::vector<LinkId> touched;
  double transfer_s = 0;
  for (const Phase& phase : plan.phases) {
    for (const Transfer& transfer : phase.transfers) {
      for (LinkId link : transfer.route) {
        if (load[link] == 0.0) touched.push_back(link);
        load[link] += transfer.bytes;
      }
    }
    double phase_s = 0;
    for (LinkId link : touched) {
      phase_s = std::max(phase_s, load[link] / capacity_Bps[link]);
      load[link] = 0.0;
    }
    touched.clear();
    transfer_s += phase_s;
  }
  const Time transfer = max(Time::from_seconds(transfer_s), plan.min_transfer_time);
  return plan.latency + transfer;
}

bool same_shape(const CollectivePlan& a, const CollectivePlan& b) {
  if (a.op != b.op || a.algorithm != b.algorithm || a.protocol != b.protocol ||
      a.latency != b.latency || a.min_transfer_time != b.min_transfer_time ||
      a.phases.size() != b.phases.size()) {
    return false;
  }
  for (std::size_t p = 0; p < a.phases.size(); ++p) {
    const auto& x = a.phases[p].transfers;
    const auto& y = b.phases[p].transfers;
    if (x.size() != y.size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (x[k].bytes != y[k].bytes) return false;
    }
  }
  return true;
}

CollectivePlan merge_instances(std::span<const CollectivePlan> instances) {
  if (instances.empty()) throw std::invalid_argument("merge_instances: no instance");
  CollectivePlan merged = instances.front();
  for (const CollectivePlan& other : instances.subspan(1)) {
    if (!same_shape(merged, other)) {
      throw std::invalid_argument("merge_instances: instances of different shapes");
    }
    for (std::size_t p = 0; p < merged.phases.size(); ++p) {
      auto& transfers = merged.phases[p].transfers;
      for (std::size_t k = 0; k < transfers.size(); ++k) {
        const Route& route = other.phases[p].transfers[k].route;
        transfers[k].route.insert(transfers[k].route.end(), route.begin(), route.end());
      }
    }
  }
  return merged;
}

}  // namespace wallsim
