// Shared fixtures: shipped clusters and profiles at a chosen size.
#pragma once

#include <string>
#include <vector>

#include "calibration/profile.hpp"
#include "sim/network/topology/topology.hpp"

namespace wallsim::test {

inline ClusterSpec shipped_cluster(const std::string& name) {
  return load_cluster_spec(std::string(WALLSIM_SOURCE_ROOT) + "/configs/clusters/" + name +
                           ".json");
}

inline Profile shipped_profile(const std::string& gpu) {
  return load_profile(std::string(WALLSIM_SOURCE_ROOT) + "/calibration/profiles/" + gpu + ".json");
}

inline std::vector<int> first_ranks(int nodes, int per_node, int gpus_per_node) {
  std::vector<int> ranks;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < per_node; ++local) ranks.push_back(node * gpus_per_node + local);
  }
  return ranks;
}

}  // namespace wallsim::test
