// Shared fixtures: shipped clusters and profiles at a chosen size, and a planning fixture.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "calibration/profile.hpp"
#include "sim/network/collective/comm_profile.hpp"
#include "sim/network/collective/planner.hpp"
#include "sim/network/topology/topology.hpp"

namespace wallsim::test {

inline ClusterSpec shipped_cluster(const std::string& name) {
  return load_cluster_spec(std::string(WALLSIM_SOURCE_ROOT) + "/configs/clusters/" + name +
                           ".json");
}

inline Profile shipped_profile(const std::string& gpu) {
  return load_profile(std::string(WALLSIM_SOURCE_ROOT) + "/calibration/profiles/" + gpu + ".json");
}

// A cluster of `gpus` GPUs with its shipped calibration profile, planning collectives.
struct PlanFixture {
  Topology topology;
  CommProfile comm;
  std::vector<double> capacities;
  PlanFixture(const ClusterSpec& spec, int gpus)
      : topology(spec, gpus),
        comm(shipped_profile(spec.gpu).comm),
        capacities(effective_capacities(topology, comm)) {}
  PlanFixture(const std::string& cluster, int gpus) : PlanFixture(shipped_cluster(cluster), gpus) {}

  CollectivePlan plan(CollectiveOp op, std::vector<int> ranks, double bytes,
                      std::optional<Algorithm> algorithm = std::nullopt,
                      std::optional<Protocol> protocol = std::nullopt) const {
    CollectiveRequest request{op, std::move(ranks), bytes, algorithm, protocol};
    return plan_collective(topology, comm, capacities, request);
  }
};

inline std::vector<int> first_ranks(int nodes, int per_node, int gpus_per_node) {
  std::vector<int> ranks;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < per_node; ++local) ranks.push_back(node * gpus_per_node + local);
  }
  return ranks;
}

}  // namespace wallsim::test
