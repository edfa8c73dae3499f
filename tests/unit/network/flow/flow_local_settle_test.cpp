// Local settles (sim/network/flow/flow_local_settle.cpp) in components of hundreds of flows:
// the rates they leave are the max-min rates of every active flow, and classes settled in them
// end when their members would.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "class_runs.hpp"
#include "reference_max_min_solver.hpp"
#include "sim/core/engine.hpp"
#include "sim/network/flow/flow_network.hpp"

using wallsim::Engine;
using wallsim::FlowId;
using wallsim::FlowNetwork;
using wallsim::Time;

namespace {

using Path = std::vector<std::uint32_t>;

double uniform(std::mt19937_64& random, double lo, double hi) {
  return lo + (hi - lo) * double(random() >> 11) * 0x1.0p-53;
}

struct Traffic {
  Path path;
  double weight;
  double cap_Bps;
};

Traffic random_traffic(std::mt19937_64& random, std::uint32_t links) {
  Traffic traffic;
  const int hops = 1 + int(random() % 5);
  for (int h = 0; h < hops; ++h) traffic.path.push_back(std::uint32_t(random() % links));
  traffic.weight = random() % 5 == 0 ? double(1 + random() % 8) : 1.0;
  traffic.cap_Bps = random() % 4 == 0 ? std::pow(10.0, uniform(random, 8.5, 11))
                                      : std::numeric_limits<double>::infinity();
  return traffic;
}

// 700 flows from `traffic` started at t = 0: one component far above the size from which
// settles start locally. Then 300 instants 10 us apart, each starting one or two flows while
// others end. After every instant the rates of all active flows are compared with the max-min
// rates that the reference solver (reference_max_min_solver.hpp) computes from scratch.
struct LocalRun {
  double worst_error = 0;  // relative, over every flow and instant
  std::size_t active_at_end = 0;
  std::uint64_t recomputed = 0;  // flows re-solved by the network over the 300 instants
  std::uint64_t solves = 0;      // its solves over them (local rounds and whole solves)
  std::uint64_t active_sum = 0;  // active flows summed over the instants
};

template <typename MakeTraffic>
LocalRun run_instants(const std::vector<double>& capacity_Bps, std::mt19937_64& random,
                      MakeTraffic make_traffic) {
  Engine engine;
  FlowNetwork network(engine, capacity_Bps);
  std::map<FlowId, Traffic> active;
  auto start = [&] {
    Traffic traffic = make_traffic();
    const double bytes = std::pow(10.0, uniform(random, 5, 8));
    auto id = std::make_shared<FlowId>();
    *id = network.start(
        traffic.path, bytes, [&active, id] { active.erase(*id); }, traffic.weight, traffic.cap_Bps);
    active.emplace(*id, std::move(traffic));
  };
  LocalRun run;
  auto compare = [&] {
    wallsim::reference::MaxMinProblem problem;
    for (double capacity : capacity_Bps) problem.add_link(capacity);
    std::vector<FlowId> ids;
    for (const auto& [id, traffic] : active) {
      problem.add_flow(traffic.path, traffic.weight, traffic.cap_Bps);
      ids.push_back(id);
    }
    std::vector<double> expected;
    wallsim::reference::MaxMinSolver().solve(problem, expected);
    for (std::size_t f = 0; f < ids.size(); ++f) {
      const double error = std::abs(network.rate(ids[f]) - expected[f]) / expected[f];
      run.worst_error = std::max(run.worst_error, error);
    }
    return ids.size();
  };
  engine.schedule_at(Time{}, [&] {
    for (int i = 0; i < 700; ++i) start();
  });
  engine.run_until(Time{});
  compare();
  const std::uint64_t recomputed_before = network.rate_recomputations();
  const std::uint64_t solves_before = network.solves();
  for (int instant = 1; instant <= 300; ++instant) {
    engine.schedule_at(Time::from_us(10.0 * instant), [&] {
      start();
      if (random() % 2 == 0) start();
    });
    engine.run_until(Time::from_us(10.0 * instant));
    run.active_sum += compare();
  }
  run.active_at_end = active.size();
  run.recomputed = network.rate_recomputations() - recomputed_before;
  run.solves = network.solves() - solves_before;
  return run;
}

}  // namespace

TEST_CASE("local settles leave the reference solver's max-min rates on every active flow",
          "[flow]") {
  SECTION("permutation traffic through a two-level tree: changes stay local") {
    // 256 hosts, each with an up and a down link of 25 GB/s, and 8 core links of 800 GB/s;
    // a flow goes host -> core -> another host, about 3 flows per host link, as permutation
    // traffic on a fat tree. A start or an end moves the rates of the few flows sharing its
    // host links and of those they meet, so each settle re-solves a small part: on average
    // fewer than a fifth of the active flows per solve (a whole solve takes all of them).
    std::mt19937_64 random(7);
    std::vector<double> capacity(2 * 256, 25e9);
    capacity.insert(capacity.end(), 8, 800e9);
    const LocalRun run = run_instants(capacity, random, [&] {
      const auto src = std::uint32_t(random() % 256), dst = std::uint32_t(random() % 256);
      return Traffic{{src, 512 + std::uint32_t(random() % 8), 256 + dst},
                     1.0,
                     std::numeric_limits<double>::infinity()};
    });
    CHECK(run.worst_error <= 1e-8);
    CHECK(run.active_at_end > 200);  // still one large component at the end
    REQUIRE(run.solves > 0);
    CHECK(run.recomputed / run.solves < run.active_sum / 300 / 5);
  }
  SECTION("random routes, weights and caps on 600 links") {
    // About 3.5 flows per link, rates spread over three orders of magnitude: changes travel
    // far, regions grow over several rounds before the check accepts them.
    std::mt19937_64 random(8);
    std::vector<double> capacity;
    for (int l = 0; l < 600; ++l) capacity.push_back(std::pow(10.0, uniform(random, 9, 11)));
    const LocalRun run =
        run_instants(capacity, random, [&] { return random_traffic(random, 600); });
    CHECK(run.worst_error <= 1e-8);
    CHECK(run.active_at_end > 128);
  }
  SECTION("random routes on 60 links: dense, local settles fall back to whole solves") {
    std::mt19937_64 random(9);
    std::vector<double> capacity;
    for (int l = 0; l < 60; ++l) capacity.push_back(std::pow(10.0, uniform(random, 9, 11)));
    const LocalRun run = run_instants(capacity, random, [&] { return random_traffic(random, 60); });
    CHECK(run.worst_error <= 1e-8);
    CHECK(run.active_at_end > 128);
  }
}

TEST_CASE("classes in a large component end when their members started one by one would",
          "[flow]") {
  // 400 groups of 1-4 members with equal bytes on 40 links, half of them mirrored (members
  // on links 10 apart) and half random (their classes split), started over 2 ms: one large
  // component whose settles start locally and fall back to whole solves where a class splits.
  // Run with each group as a class and as single flows: every member ends at the same time up
  // to the batching tolerance plus rounding.
  std::mt19937_64 random(11);
  std::vector<wallsim::test::Group> groups;
  for (int g = 0; g < 400; ++g) {
    wallsim::test::Group group;
    const int members = 1 + int(random() % 4);
    const bool mirrored = random() % 2 == 0;
    const auto base = std::uint32_t(random() % 10);
    for (int m = 0; m < members; ++m) {
      Path route;
      if (mirrored) {
        route = {base + std::uint32_t(10 * m), (base + 3 + std::uint32_t(10 * m)) % 40};
      } else {
        for (int hop = 0; hop < 3; ++hop) route.push_back(std::uint32_t(random() % 40));
      }
      group.routes.push_back(route);
    }
    group.bytes = 1e6 * double(1 + random() % 50);
    group.at = Time::from_ns(double(random() % 2'000'000));
    groups.push_back(group);
  }
  const std::vector<double> capacity(40, 25e9);
  const auto [with_classes, splits] = wallsim::test::run_groups(groups, capacity, true);
  const auto [singles, none] = wallsim::test::run_groups(groups, capacity, false);
  CHECK(splits > 0);
  CHECK(none == 0);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    REQUIRE(with_classes[g].size() == groups[g].routes.size());
    REQUIRE(singles[g].size() == groups[g].routes.size());
    for (std::size_t m = 0; m < singles[g].size(); ++m) {
      // Batched completions may move an end by 1 ns each; rates agree to 1e-9 relative.
      CHECK(with_classes[g][m] == Approx(singles[g][m]).epsilon(1e-8).margin(4e-9));
    }
  }
}
