// Test support: traffic given as groups of equal-byte members, run once with each group as a
// class flow and once as single flows, so tests can check that classes change speed, not ends.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/core/engine.hpp"
#include "sim/network/flow/flow_network.hpp"

namespace wallsim::test {

using Path = std::vector<std::uint32_t>;

// The concatenated routes and member offsets of a class (FlowNetwork::start_group's input).
inline std::pair<Path, std::vector<std::uint32_t>> class_routes(const std::vector<Path>& routes) {
  Path links;
  std::vector<std::uint32_t> begin{0};
  for (const Path& route : routes) {
    links.insert(links.end(), route.begin(), route.end());
    begin.push_back(static_cast<std::uint32_t>(links.size()));
  }
  return {links, begin};
}

struct Group {
  std::vector<Path> routes;
  double bytes;
  Time at;
};

struct GroupRun {
  std::vector<std::vector<double>> ends;  // per group, its members' end times (s), sorted
  std::uint64_t classes_split = 0;
};

// Starts every group at its time on links of the given capacities, as one class
// (start_group) or as one single flow per member, and runs to the end.
inline GroupRun run_groups(const std::vector<Group>& groups,
                           const std::vector<double>& capacity_Bps, bool as_classes) {
  Engine engine;
  FlowNetwork network(engine, capacity_Bps);
  GroupRun run;
  run.ends.resize(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    engine.schedule_at(groups[g].at, [&, g] {
      const Group& group = groups[g];
      auto record = [&, g](std::size_t n) {
        for (std::size_t i = 0; i < n; ++i) run.ends[g].push_back(engine.now().seconds());
      };
      if (as_classes) {
        const auto [links, begin] = class_routes(group.routes);
        network.start_group(links, begin, group.bytes, record);
      } else {
        for (const Path& route : group.routes) {
          network.start(route, group.bytes, [record] { record(1); });
        }
      }
    });
  }
  engine.run();
  for (auto& times : run.ends) std::sort(times.begin(), times.end());
  run.classes_split = network.classes_split();
  return run;
}

}  // namespace wallsim::test
