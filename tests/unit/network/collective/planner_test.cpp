#include <catch2/catch.hpp>

#include <set>

#include "sim/core/input_error.hpp"
#include "sim/network/collective/plan_builders.hpp"
#include "sim/network/collective/planner.hpp"
#include "test_setup.hpp"

using namespace wallsim;

namespace {

using Fixture = test::PlanFixture;

double bytes_sent_by(const CollectivePlan& plan, const Topology& topology, int gpu) {
  // A GPU's egress is the first link of the routes it starts: its NVLink or PCIe up-link.
  const Route own = topology.nvlink_route(gpu, gpu == 0 ? 1 : 0);
  double bytes = 0;
  for (const auto& phase : plan.phases) {
    for (const auto& transfer : phase.transfers) {
      if (transfer.route.front() == own.front()) bytes += transfer.bytes;
    }
  }
  return bytes;
}

}  // namespace

TEST_CASE("ring all-reduce on 8 ranks moves 2(n-1)/n of the buffer per rank",
          "[collective][plan]") {
  const Fixture f("dgx-h100", 8);
  const double bytes = 1 << 30;
  const auto plan = f.plan(CollectiveOp::kAllReduce, test::first_ranks(1, 8, 8), bytes,
                           Algorithm::kRing, Protocol::kSimple);
  // Reduce-scatter then all-gather: 2 x 7 steps of S/8 each = 1.75 S per rank.
  for (int gpu = 0; gpu < 8; ++gpu)
    CHECK(bytes_sent_by(plan, f.topology, gpu) == Approx(1.75 * bytes));
  // All-gather alone: 7 steps of S/8 = 0.875 S.
  const auto gather = f.plan(CollectiveOp::kAllGather, test::first_ranks(1, 8, 8), bytes,
                             Algorithm::kRing, Protocol::kSimple);
  CHECK(bytes_sent_by(gather, f.topology, 3) == Approx(0.875 * bytes));
}

TEST_CASE("the LL protocol puts two wire bytes on the link per payload byte",
          "[collective][plan]") {
  const Fixture f("dgx-h100", 8);
  const auto plan = f.plan(CollectiveOp::kAllGather, test::first_ranks(1, 8, 8), 8192,
                           Algorithm::kRing, Protocol::kLL);
  // 0.875 S of payload in 16-byte lines holding 8 data bytes.
  CHECK(bytes_sent_by(plan, f.topology, 0) == Approx(2 * 0.875 * 8192));
}

TEST_CASE("8x H100 all-reduce switches from ring LL to NVLS where the model crosses",
          "[collective][plan]") {
  const Fixture f("dgx-h100", 8);
  // Ring LL: 15.0 µs + 1.75 S / min(141 GB/s cap, 0.5 x 370.8); NVLS: 25 µs +
  // S (1 + 1/8) / (370.8 GB/s x nvls_efficiency). The two meet where
  // 10 µs = S (1.75 / 141e9 - 1.125 / (370.8e9 x e)).
  const double nvls_Bps = 450e9 * f.comm.nvlink_efficiency * f.comm.nvls_efficiency;
  const double crossover = 10e-6 / (1.75 / 141e9 - 1.125 / nvls_Bps);
  CHECK(crossover == Approx(1.14e6).epsilon(0.02));  // between 1 MiB and 2 MiB, as on H200
  const auto ranks = test::first_ranks(1, 8, 8);
  const auto below = f.plan(CollectiveOp::kAllReduce, ranks, crossover * 0.95);
  const auto above = f.plan(CollectiveOp::kAllReduce, ranks, crossover * 1.05);
  CHECK(below.algorithm == Algorithm::kRing);
  CHECK(below.protocol == Protocol::kLL);
  CHECK(above.algorithm == Algorithm::kNvls);
  CHECK(above.protocol == Protocol::kSimple);
}

TEST_CASE("tiny multi-node all-reduces use the tree, huge ones the ring", "[collective][plan]") {
  const Fixture f("dgx-h100", 128);
  const auto ranks = test::first_ranks(16, 8, 8);
  // Tree LL has 55 µs of latency against the ring's 312 µs (§4.7)...
  CHECK(f.plan(CollectiveOp::kAllReduce, ranks, 4096).algorithm == Algorithm::kTree);
  // ...but its Simple bandwidth is capped at 288 GB/s bus against the ring's 8 NICs x 47 GB/s.
  CHECK(f.plan(CollectiveOp::kAllReduce, ranks, 16.0 * (1 << 30)).algorithm == Algorithm::kRing);
}

TEST_CASE("a multi-node ring crosses nodes on each GPU's own rail", "[collective][plan]") {
  const Fixture f("dgx-h100", 16);
  const auto plan = f.plan(CollectiveOp::kAllGather, test::first_ranks(2, 8, 8), 1 << 26,
                           Algorithm::kRing, Protocol::kSimple);
  int inter_node = 0;
  for (const auto& transfer : plan.phases.front().transfers) {
    const Link& first = f.topology.link(transfer.route.front());
    if (first.tier != LinkTier::kPcie) continue;
    ++inter_node;
    // GPU -> NIC -> leaf -> NIC -> GPU: same rail, one leaf, no NVLink detour.
    CHECK(transfer.route.size() == 4);
  }
  CHECK(inter_node == 16);  // every GPU sends its 1/8 share across the boundary
}

TEST_CASE("forcing an algorithm the op does not have lists what is available",
          "[collective][plan]") {
  const Fixture f("dgx-h100", 8);
  CHECK_THROWS_WITH(
      f.plan(CollectiveOp::kAllGather, test::first_ranks(1, 8, 8), 1024, Algorithm::kNvls),
      Catch::Contains("available: ring/ll, ring/ll128, ring/simple"));
  const Fixture a100("dgx-a100", 8);
  // No NVLink SHARP on A100.
  CHECK_THROWS_AS(
      a100.plan(CollectiveOp::kAllReduce, test::first_ranks(1, 8, 8), 1024, Algorithm::kNvls),
      InputError);
}

TEST_CASE("ranks outside the cluster or repeated are rejected", "[collective][plan]") {
  const Fixture f("dgx-h100", 8);
  CHECK_THROWS_WITH(f.plan(CollectiveOp::kAllReduce, {0, 8}, 1024),
                    Catch::Contains("rank outside the cluster (valid: 0..7)"));
  CHECK_THROWS_WITH(f.plan(CollectiveOp::kAllReduce, {1, 1}, 1024),
                    Catch::Contains("rank listed twice"));
  CHECK_THROWS_AS(f.plan(CollectiveOp::kAllReduce, {1}, 1024), InputError);
}

TEST_CASE("the double binary tree's interior nodes are the other tree's leaves",
          "[collective][plan]") {
  for (int n : {2, 3, 8, 13, 16}) {
    CAPTURE(n);
    std::set<int> interior[2];
    for (int tree = 0; tree < 2; ++tree) {
      int roots = 0;
      for (int k = 0; k < n; ++k) {
        const int parent = double_binary_tree_parent(k, n, tree);
        if (parent < 0) {
          ++roots;
        } else {
          CHECK(parent != k);
          interior[tree].insert(parent);
        }
      }
      CHECK(roots == 1);
    }
    for (int node : interior[0]) CHECK(interior[1].count(node) == 0);
  }
}
