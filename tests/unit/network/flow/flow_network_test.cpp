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

namespace {

using Path = std::vector<std::uint32_t>;

// Finish times are rounded up to the next picosecond by Time::from_seconds; a few ps of slack
// covers that and the floating-point byte accounting.
Approx at_seconds(double seconds) {
  return Approx(seconds).margin(1e-11);
}

// Starts a flow that records the engine time at which its callback runs.
wallsim::FlowId start_recording(FlowNetwork& network, Engine& engine, const Path& path,
                                double bytes, double& finished_s, double multiplicity = 1,
                                double cap_Bps = std::numeric_limits<double>::infinity()) {
  return network.start(
      path, bytes, [&engine, &finished_s] { finished_s = engine.now().seconds(); }, multiplicity,
      cap_Bps);
}

}  // namespace

TEST_CASE("one flow alone gets the full capacity and finishes at bytes / capacity", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {100e9});
  double finished_s = -1;
  const auto id = start_recording(network, engine, {0}, 1e9, finished_s);
  CHECK(network.rate(id) == 100e9);
  engine.run();
  CHECK(finished_s == at_seconds(1e9 / 100e9));  // 10 ms
  CHECK_FALSE(network.active(id));
  CHECK(network.active_flows() == 0);
}

TEST_CASE("a flow's rate is set by the slowest link on its path", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {100e9, 25e9, 50e9});
  double finished_s = -1;
  const auto id = start_recording(network, engine, {0, 1, 2}, 1e9, finished_s);
  CHECK(network.rate(id) == 25e9);
  engine.run();
  CHECK(finished_s == at_seconds(0.04));
}

TEST_CASE("two flows on one link get half each", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {100e9});
  double a_s = -1, b_s = -1;
  const auto a = start_recording(network, engine, {0}, 1e9, a_s);
  const auto b = start_recording(network, engine, {0}, 1e9, b_s);
  CHECK(network.rate(a) == 50e9);
  CHECK(network.rate(b) == 50e9);
  engine.run();
  CHECK(a_s == at_seconds(0.02));
  CHECK(b_s == at_seconds(0.02));
}

TEST_CASE("a flow bottlenecked elsewhere leaves its unused share to the others", "[flow]") {
  // Links A = 20 GB/s, B = 100 GB/s, C = 100 GB/s. x crosses A and B, z crosses A, y crosses B
  // and C. A saturates first at 20/2 = 10 GB/s (B would at 100/2 = 50): x = z = 10. Then B has
  // 100 - 10 = 90 left for y alone (C allows 100), so y = 90, not an equal 50.
  Engine engine;
  FlowNetwork network(engine, {20e9, 100e9, 100e9});
  double unused = 0;
  const auto x = start_recording(network, engine, {0, 1}, 1e9, unused);
  const auto z = start_recording(network, engine, {0}, 1e9, unused);
  const auto y = start_recording(network, engine, {1, 2}, 1e9, unused);
  CHECK(network.rate(x) == Approx(10e9));
  CHECK(network.rate(z) == Approx(10e9));
  CHECK(network.rate(y) == Approx(90e9));
}

TEST_CASE("a flow of multiplicity m takes the share of m flows", "[flow]") {
  // 4 members on 100 GB/s: 25 GB/s each, whether they travel as one flow of 3 plus one, or
  // as 4 single flows.
  Engine engine;
  FlowNetwork grouped(engine, {100e9});
  double unused = 0;
  const auto three = start_recording(grouped, engine, {0}, 1e9, unused, 3);
  const auto one = start_recording(grouped, engine, {0}, 1e9, unused, 1);
  CHECK(grouped.rate(three) == Approx(25e9));
  CHECK(grouped.rate(one) == Approx(25e9));

  FlowNetwork separate(engine, {100e9});
  std::vector<wallsim::FlowId> singles;
  for (int i = 0; i < 4; ++i)
    singles.push_back(start_recording(separate, engine, {0}, 1e9, unused));
  for (auto id : singles) CHECK(separate.rate(id) == Approx(25e9));
}

TEST_CASE("a rate cap limits a flow and frees capacity for the others", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {100e9});
  double unused = 0;
  const auto capped = start_recording(network, engine, {0}, 1e9, unused, 1, 20e9);
  const auto free = start_recording(network, engine, {0}, 1e9, unused);
  CHECK(network.rate(capped) == Approx(20e9));
  CHECK(network.rate(free) == Approx(80e9));
}

TEST_CASE("when one flow ends the other speeds up, finish times follow the pieces", "[flow]") {
  // 10 GB/s link. a: 2 GB from t = 0; b: 3 GB from t = 0.1 s.
  // [0, 0.1): a alone, 10 GB/s, sends 1 GB (1 GB left).
  // [0.1, 0.3): both at 5 GB/s; a's last 1 GB takes 0.2 s -> a ends at 0.3 s; b sent 1 GB.
  // [0.3, 0.5): b alone at 10 GB/s, its last 2 GB take 0.2 s -> b ends at 0.5 s.
  Engine engine;
  FlowNetwork network(engine, {10e9});
  double a_s = -1, b_s = -1;
  const auto a = start_recording(network, engine, {0}, 2e9, a_s);
  wallsim::FlowId b = 0;
  engine.schedule_at(Time::from_seconds(0.1), [&] {
    b = start_recording(network, engine, {0}, 3e9, b_s);
    CHECK(network.rate(a) == Approx(5e9));
  });
  engine.run_until(Time::from_seconds(0.31));
  CHECK(a_s == at_seconds(0.3));
  CHECK(network.rate(b) == Approx(10e9));
  engine.run();
  CHECK(b_s == at_seconds(0.5));
}

TEST_CASE("a flow with no bytes or no links completes at the current time", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {1e9});
  double empty_s = -1, local_s = -1;
  engine.schedule_at(Time::from_us(5), [&] {
    start_recording(network, engine, {0}, 0, empty_s);
    start_recording(network, engine, {}, 1e6, local_s);
    CHECK(network.active_flows() == 0);
  });
  engine.run();
  CHECK(empty_s == at_seconds(5e-6));
  CHECK(local_s == at_seconds(5e-6));
}

TEST_CASE("a completion callback may start the next flow at the completion time", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {1e9});
  double second_s = -1;
  network.start(Path{0}, 1e6, [&] { start_recording(network, engine, {0}, 1e6, second_s); });
  engine.run();
  CHECK(second_s == at_seconds(2e-3));  // two back-to-back 1 ms transfers
}

TEST_CASE("flows on disjoint links do not recompute each other", "[flow]") {
  Engine engine;
  FlowNetwork network(engine, {1e9, 1e9});
  double unused = 0;
  start_recording(network, engine, {0}, 1e6, unused);
  CHECK(network.rate_recomputations() == 1);  // just the new flow
  start_recording(network, engine, {1}, 2e6, unused);
  CHECK(network.rate_recomputations() == 2);  // link 1's flow alone; link 0's is untouched
  start_recording(network, engine, {0}, 1e6, unused);
  CHECK(network.rate_recomputations() == 4);  // both flows on link 0
  engine.run();
  // Both link-0 flows end together at 2 ms, in one batch that leaves nobody behind (+0), and
  // so does the link-1 flow.
  CHECK(network.rate_recomputations() == 4);
  CHECK(network.flows_started() == 3);
}

TEST_CASE("identical runs give identical finish times", "[flow]") {
  auto run_once = [] {
    Engine engine;
    FlowNetwork network(engine, std::vector<double>(16, 50e9));
    std::mt19937_64 random(42);
    std::vector<double> finished_s(200, -1);
    for (int i = 0; i < 200; ++i) {
      Path path;
      for (int hop = 0; hop < 3; ++hop) path.push_back(static_cast<std::uint32_t>(random() % 16));
      const double bytes = 1e6 * double(1 + random() % 100);
      const Time at = Time::from_ps(static_cast<std::int64_t>(random() % 1'000'000'000));
      engine.schedule_at(at, [&network, &engine, &finished_s, path, bytes, i] {
        start_recording(network, engine, path, bytes, finished_s[i]);
      });
    }
    engine.run();
    return finished_s;
  };
  const auto first = run_once();
  CHECK(first == run_once());
  CHECK(std::count(first.begin(), first.end(), -1.0) == 0);
}

TEST_CASE("flows started at one instant cost one solve", "[flow]") {
  // 100 flows on 10 links start in one event: the settle after it solves them together.
  Engine engine;
  FlowNetwork network(engine, std::vector<double>(10, 100e9));
  engine.schedule_at(Time::from_us(1), [&] {
    for (std::uint32_t i = 0; i < 100; ++i) network.start(Path{i % 10}, 1e6, nullptr);
  });
  engine.run_until(Time::from_us(1));
  CHECK(network.solves() == 1);
  CHECK(network.rate_recomputations() == 100);
}

TEST_CASE("a class of symmetric members moves as one flow and ends with all of them", "[flow]") {
  // Four members, each alone on its own 100 GB/s link: 100 GB/s each, 1 GB in 10 ms; one flow
  // in the solver, one callback for all four.
  Engine engine;
  FlowNetwork network(engine, std::vector<double>(4, 100e9));
  const Path links{0, 1, 2, 3};
  const std::vector<std::uint32_t> begin{0, 1, 2, 3, 4};
  std::vector<std::pair<double, std::size_t>> ended;
  const auto id = network.start_group(
      links, begin, 1e9, [&](std::size_t n) { ended.emplace_back(engine.now().seconds(), n); });
  CHECK(network.rate(id) == 100e9);
  CHECK(network.rate_recomputations() == 1);
  engine.run();
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].first == at_seconds(0.01));
  CHECK(ended[0].second == 4);
  CHECK(network.classes_split() == 0);
}

TEST_CASE("a class whose members meet different contention splits, each ends on its own",
          "[flow]") {
  // Members a (link 0) and b (link 1), 1 GB each at up to 10 GB/s; a single flow x of 0.5 GB
  // shares link 0. One rate for both would leave b without a bottleneck of its own, so the
  // class splits: a and x get 5 GB/s, b 10 GB/s. x ends at 0.1 s (a has 0.5 GB left, then
  // alone at 10 GB/s: ends at 0.15 s); b ends at 0.1 s.
  Engine engine;
  FlowNetwork network(engine, {10e9, 10e9});
  double x_s = -1;
  start_recording(network, engine, {0}, 0.5e9, x_s);
  std::vector<std::pair<double, std::size_t>> ended;
  network.start_group(Path{0, 1}, std::vector<std::uint32_t>{0, 1, 2}, 1e9,
                      [&](std::size_t n) { ended.emplace_back(engine.now().seconds(), n); });
  engine.run();
  CHECK(network.classes_split() == 1);
  CHECK(x_s == at_seconds(0.1));
  REQUIRE(ended.size() == 2);
  CHECK(ended[0].first == at_seconds(0.1));
  CHECK(ended[0].second == 1);
  CHECK(ended[1].first == at_seconds(0.15));
  CHECK(ended[1].second == 1);
}

TEST_CASE("classes give the finish times of their members started one by one", "[flow]") {
  // Random traffic on 24 links: 60 groups of 1-6 members with equal bytes, some on mirrored
  // links (symmetric), some random (asymmetric, so their classes split), started over 1 ms.
  // Run once with each group as a class and once as single flows: every member ends at the
  // same time up to the batching tolerance plus rounding.
  std::mt19937_64 random(99);
  std::vector<wallsim::test::Group> groups;
  for (int g = 0; g < 60; ++g) {
    wallsim::test::Group group;
    const int members = 1 + int(random() % 6);
    const bool mirrored = random() % 2 == 0;
    const std::uint32_t base = std::uint32_t(random() % 4);
    for (int m = 0; m < members; ++m) {
      Path route;
      if (mirrored) {
        route = {std::uint32_t(4 * m % 24 + base), std::uint32_t((4 * m + 12) % 24 + base)};
      } else {
        for (int hop = 0; hop < 3; ++hop) route.push_back(std::uint32_t(random() % 24));
      }
      group.routes.push_back(route);
    }
    group.bytes = 1e6 * double(1 + random() % 50);
    group.at = Time::from_ns(double(random() % 1'000'000));
    groups.push_back(group);
  }
  const std::vector<double> capacity(24, 25e9);
  const auto [with_classes, splits] = wallsim::test::run_groups(groups, capacity, true);
  const auto [singles, none] = wallsim::test::run_groups(groups, capacity, false);
  CHECK(splits > 0);  // the random groups do split
  CHECK(none == 0);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    REQUIRE(with_classes[g].size() == groups[g].routes.size());
    REQUIRE(singles[g].size() == groups[g].routes.size());
    for (std::size_t m = 0; m < singles[g].size(); ++m) {
      // A batched completion may move an end by 1 ns; the rest is picosecond rounding.
      CHECK(with_classes[g][m] == Approx(singles[g][m]).margin(2e-9));
    }
  }
}
