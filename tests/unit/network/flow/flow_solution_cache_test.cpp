// Kept solutions of repeated components (sim/network/flow/flow_solution_cache.cpp).
#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "class_runs.hpp"
#include "sim/core/engine.hpp"
#include "sim/network/flow/flow_network.hpp"

using wallsim::Engine;
using wallsim::FlowNetwork;
using wallsim::Time;

using wallsim::test::class_routes;
using wallsim::test::Path;

TEST_CASE("a component of the same shapes again takes the kept solution", "[flow]") {
  // Link 0 (30 GB/s) carries class A (members on links 0-1 and 0-2) and class B (one member on
  // links 0-3); links 1-3 have 20 GB/s. Three members share link 0: 10 GB/s each, 1 GB in
  // 0.1 s. The same two shapes at 1 s form the same component: its kept rates, the same
  // 0.1 s. At 2 s B comes with multiplicity 2: another problem (four members share link 0,
  // 7.5 GB/s each, 1 GB in 0.1333 s), solved afresh.
  Engine engine;
  FlowNetwork network(engine, {30e9, 20e9, 20e9, 20e9});
  const auto [a_links, a_begin] = class_routes({{0, 1}, {0, 2}});
  const auto [b_links, b_begin] = class_routes({{0, 3}});
  const FlowNetwork::Shape a = network.make_shape(a_links, a_begin);
  const FlowNetwork::Shape b = network.make_shape(b_links, b_begin);
  std::vector<double> ends;
  auto record = [&](std::size_t) { ends.push_back(engine.now().seconds()); };
  auto start_both = [&](double b_multiplicity) {
    network.start_shape(a, 1e9, record);
    network.start_shape(b, 1e9, record, b_multiplicity);
  };
  engine.schedule_at(Time{}, [&] { start_both(1); });
  engine.run();
  CHECK(network.solutions_reused() == 0);
  engine.schedule_at(Time::from_seconds(1), [&] { start_both(1); });
  engine.run();
  CHECK(network.solutions_reused() == 1);
  engine.schedule_at(Time::from_seconds(2), [&] { start_both(2); });
  engine.run();
  CHECK(network.solutions_reused() == 1);
  REQUIRE(ends.size() == 6);
  for (int i = 0; i < 2; ++i) CHECK(ends[i] == Approx(0.1).margin(1e-11));
  for (int i = 2; i < 4; ++i) CHECK(ends[i] == Approx(1.1).margin(1e-11));
  for (int i = 4; i < 6; ++i) CHECK(ends[i] == Approx(2 + 1.0 / 7.5).margin(1e-11));
}

TEST_CASE("classes of shared shapes end when their members started one by one would", "[flow]") {
  // A pool of 12 class shapes on 24 links of 25 GB/s (half mirrored, half random routes, so
  // some classes split), started 400 times from the pool at random times over 40 ms with
  // random bytes (a few flows overlap at a time): components of the same shapes come back and
  // take kept solutions. Run as classes of the shared shapes and as single flows (which never
  // reuse: every start is a new shape): every member ends at the same time up to the batching
  // tolerance plus rounding.
  std::mt19937_64 random(5);
  std::vector<std::vector<Path>> pool;
  for (int s = 0; s < 12; ++s) {
    std::vector<Path> routes;
    const int members = 1 + int(random() % 4);
    const bool mirrored = s % 2 == 0;
    const auto base = std::uint32_t(random() % 4);
    for (int m = 0; m < members; ++m) {
      if (mirrored) {
        routes.push_back({base + std::uint32_t(4 * m), base + 12 + std::uint32_t(4 * m) % 12});
      } else {
        routes.push_back({std::uint32_t(random() % 24), std::uint32_t(random() % 24)});
      }
    }
    pool.push_back(routes);
  }
  struct Start {
    std::size_t shape;
    double bytes;
    Time at;
  };
  std::vector<Start> starts;
  for (int i = 0; i < 400; ++i) {
    starts.push_back({std::size_t(random() % pool.size()), 1e6 * double(1 + random() % 8),
                      Time::from_ns(double(100'000 * (random() % 400)))});
  }
  auto run = [&](bool as_classes) {
    Engine engine;
    FlowNetwork network(engine, std::vector<double>(24, 25e9));
    std::vector<FlowNetwork::Shape> shapes;
    for (const auto& routes : pool) {
      const auto [links, begin] = class_routes(routes);
      shapes.push_back(network.make_shape(links, begin));
    }
    std::vector<std::vector<double>> ends(starts.size());
    for (std::size_t i = 0; i < starts.size(); ++i) {
      engine.schedule_at(starts[i].at, [&, i] {
        auto record = [&, i](std::size_t n) {
          for (std::size_t k = 0; k < n; ++k) ends[i].push_back(engine.now().seconds());
        };
        if (as_classes) {
          network.start_shape(shapes[starts[i].shape], starts[i].bytes, record);
        } else {
          for (const Path& route : pool[starts[i].shape]) {
            network.start(route, starts[i].bytes, [record] { record(1); });
          }
        }
      });
    }
    engine.run();
    for (auto& times : ends) std::sort(times.begin(), times.end());
    return std::make_pair(ends, network.solutions_reused());
  };
  const auto [with_classes, reused] = run(true);
  const auto [singles, none] = run(false);
  CHECK(reused > 0);
  CHECK(none == 0);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    REQUIRE(with_classes[i].size() == pool[starts[i].shape].size());
    REQUIRE(singles[i].size() == with_classes[i].size());
    for (std::size_t m = 0; m < singles[i].size(); ++m) {
      CHECK(with_classes[i][m] == Approx(singles[i][m]).epsilon(1e-8).margin(4e-9));
    }
  }
}
