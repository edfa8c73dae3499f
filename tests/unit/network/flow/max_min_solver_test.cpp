#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "reference_max_min_solver.hpp"
#include "sim/network/flow/max_min_solver.hpp"

using wallsim::MaxMinProblem;
using wallsim::MaxMinSolver;

namespace {

std::vector<double> solve(const MaxMinProblem& problem) {
  MaxMinSolver solver;
  std::vector<double> rates;
  solver.solve(problem, rates);
  return rates;
}

}  // namespace

TEST_CASE("parking lot: a flow over three links and one short flow per link each get half",
          "[max_min]") {
  // Every link carries the long flow and one short flow; each saturates at level 1/2.
  MaxMinProblem problem;
  for (int l = 0; l < 3; ++l) problem.add_link(1.0);
  const std::uint32_t all[] = {0, 1, 2};
  problem.add_flow(all, 1);
  for (std::uint32_t l = 0; l < 3; ++l) problem.add_flow(std::span(&l, 1), 1);
  CHECK(solve(problem) == std::vector{0.5, 0.5, 0.5, 0.5});
}

TEST_CASE("progressive filling freezes the tightest link first and gives the rest onward",
          "[max_min]") {
  // Links: A = 2, B = 10. Flows: x over A and B, z over A, y over B.
  // A saturates first at 2/2 = 1 (B would at 10/2 = 5): x = z = 1. B keeps 10 - 1 = 9 for y.
  MaxMinProblem problem;
  const auto a = problem.add_link(2);
  const auto b = problem.add_link(10);
  const std::uint32_t x_path[] = {a, b}, z_path[] = {a}, y_path[] = {b};
  problem.add_flow(x_path, 1);
  problem.add_flow(z_path, 1);
  problem.add_flow(y_path, 1);
  const auto rates = solve(problem);
  CHECK(rates[0] == Approx(1));
  CHECK(rates[1] == Approx(1));
  CHECK(rates[2] == Approx(9));
}

TEST_CASE("a flow's weight counts it that many times on every link it crosses", "[max_min]") {
  // Link 12 shared by a weight-3 flow and a weight-1 flow: 4 members at 12/4 = 3 each.
  MaxMinProblem problem;
  const auto l = problem.add_link(12);
  problem.add_flow(std::span(&l, 1), 3);
  problem.add_flow(std::span(&l, 1), 1);
  CHECK(solve(problem) == std::vector{3.0, 3.0});
}

TEST_CASE("a capped flow stops at its cap and leaves the rest to others", "[max_min]") {
  MaxMinProblem problem;
  const auto l = problem.add_link(10);
  problem.add_flow(std::span(&l, 1), 1, 2.0);
  problem.add_flow(std::span(&l, 1), 1);
  CHECK(solve(problem) == std::vector{2.0, 8.0});
}

TEST_CASE("random problems get feasible rates where every flow has a bottleneck", "[max_min]") {
  // Max-min fairness holds iff the allocation is feasible and every flow is at its cap or
  // crosses a saturated link on which no other flow is faster (Bertsekas & Gallager §6.5.2).
  std::mt19937 random(7);
  for (int trial = 0; trial < 50; ++trial) {
    MaxMinProblem problem;
    const int links = 1 + int(random() % 20);
    for (int l = 0; l < links; ++l) problem.add_link(1.0 + random() % 100);
    const int flows = 1 + int(random() % 40);
    for (int f = 0; f < flows; ++f) {
      std::vector<std::uint32_t> path;
      const int hops = 1 + int(random() % 4);
      for (int h = 0; h < hops; ++h) path.push_back(random() % links);
      std::sort(path.begin(), path.end());
      path.erase(std::unique(path.begin(), path.end()), path.end());
      const double cap =
          random() % 3 == 0 ? 1.0 + random() % 50 : std::numeric_limits<double>::infinity();
      problem.add_flow(path, 1.0 + random() % 3, cap);
    }
    const auto rates = solve(problem);
    std::vector<double> load(links, 0.0), fastest(links, 0.0);
    for (std::size_t f = 0; f < problem.num_flows(); ++f) {
      for (auto k = problem.link_begin[f]; k < problem.link_begin[f + 1]; ++k) {
        load[problem.link_index[k]] += problem.weight[f] * rates[f];
        fastest[problem.link_index[k]] = std::max(fastest[problem.link_index[k]], rates[f]);
      }
    }
    for (int l = 0; l < links; ++l) CHECK(load[l] <= problem.capacity_Bps[l] * (1 + 1e-9));
    for (std::size_t f = 0; f < problem.num_flows(); ++f) {
      bool bottlenecked = rates[f] >= problem.cap_Bps[f] * (1 - 1e-9);
      for (auto k = problem.link_begin[f]; k < problem.link_begin[f + 1]; ++k) {
        const auto l = problem.link_index[k];
        const bool saturated = load[l] >= problem.capacity_Bps[l] * (1 - 1e-9);
        bottlenecked |= saturated && rates[f] >= fastest[l] * (1 - 1e-9);
      }
      CHECK(bottlenecked);
    }
  }
}

// The product solver against the reference (reference_max_min_solver.hpp: one entry per
// crossing, no counts) on random problems: random link counts and capacities over three
// orders of magnitude, paths that may repeat a link, weights (multiplicities), and caps on a
// third of the flows. The product solver gets each problem twice: as the reference does (a
// repeated link listed again) and compressed (distinct links with crossing counts).
TEST_CASE("the solver gives the reference solver's rates on 1,000 random problems", "[max_min]") {
  std::mt19937_64 random(20261201);
  auto uniform = [&](double lo, double hi) {
    return lo + (hi - lo) * double(random() >> 11) * 0x1.0p-53;
  };
  wallsim::reference::MaxMinSolver reference;
  MaxMinSolver solver;
  std::vector<double> expected, listed, counted;
  double worst = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    wallsim::reference::MaxMinProblem plain;
    MaxMinProblem repeated, compressed;
    const int links = 1 + int(random() % 60);
    for (int l = 0; l < links; ++l) {
      const double capacity = std::pow(10.0, uniform(9, 12));  // 1 GB/s .. 1 TB/s
      plain.add_link(capacity);
      repeated.add_link(capacity);
      compressed.add_link(capacity);
    }
    const int flows = 1 + int(random() % 120);
    for (int f = 0; f < flows; ++f) {
      std::vector<std::uint32_t> path;
      const int hops = 1 + int(random() % 8);
      for (int h = 0; h < hops; ++h) path.push_back(std::uint32_t(random() % links));
      const double weight = random() % 4 == 0 ? double(1 + random() % 64) : 1.0;
      const double cap = random() % 3 == 0 ? std::pow(10.0, uniform(8, 12))
                                           : std::numeric_limits<double>::infinity();
      plain.add_flow(path, weight, cap);
      repeated.add_flow(path, weight, cap);
      std::vector<std::uint32_t> distinct;
      std::vector<double> crossings;
      for (std::uint32_t link : path) {
        const auto at = std::find(distinct.begin(), distinct.end(), link);
        if (at == distinct.end()) {
          distinct.push_back(link);
          crossings.push_back(1.0);
        } else {
          crossings[std::size_t(at - distinct.begin())] += 1.0;
        }
      }
      compressed.add_flow(distinct, crossings, weight, cap);
    }
    reference.solve(plain, expected);
    solver.solve(repeated, listed);
    solver.solve(compressed, counted);
    REQUIRE(expected.size() == std::size_t(flows));
    for (int f = 0; f < flows; ++f) {
      REQUIRE(expected[f] > 0);
      worst = std::max({worst, std::abs(listed[f] - expected[f]) / expected[f],
                        std::abs(counted[f] - expected[f]) / expected[f]});
    }
  }
  CHECK(worst <= 1e-9);
}
