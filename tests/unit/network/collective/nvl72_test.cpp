// The GB200 NVL72 rack as shipped (configs/clusters/gb200-nvl72.json): 18 trays of 4 GPUs, one
// 72-GPU NVLink domain with NVLink SHARP, one 400 Gb/s NIC per GPU between racks. Collectives
// inside the rack never touch a NIC; NCCL's algorithms see the rack as one node.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

#include "sim/network/collective/planner.hpp"
#include "test_setup.hpp"

using namespace wallsim;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::vector<int> ranks_from(int first, int count) {
  std::vector<int> ranks(count);
  std::iota(ranks.begin(), ranks.end(), first);
  return ranks;
}

bool nvlink_only(const Topology& topology, const CollectivePlan& plan) {
  for (const auto& phase : plan.phases) {
    for (const auto& transfer : phase.transfers) {
      for (LinkId id : transfer.route) {
        if (topology.link(id).tier != LinkTier::kNvlink) return false;
      }
    }
  }
  return true;
}

double busbw_GBps(const test::PlanFixture& f, const CollectivePlan& plan) {
  const double seconds = contention_free_time(plan, f.capacities).seconds();
  return plan.bytes * bus_bandwidth_factor(plan.op, plan.ranks) / seconds / 1e9;
}

// gb200.json comm: NVLink 5 at 900 GB/s line rate x NCCL's 40.1/50 per link.
constexpr double kNvlinkEffectiveGBps = 900 * 0.802;

}  // namespace

TEST_CASE("two NVL72 racks are 36 four-GPU trays in two 72-GPU NVLink domains",
          "[collective][nvl72]") {
  const test::PlanFixture f("gb200-nvl72", 144);
  CHECK(f.topology.num_nodes() == 36);
  CHECK(f.topology.num_domains() == 2);
  CHECK(f.topology.gpus_per_domain() == 72);
  const auto counts = f.topology.counts();
  CHECK(counts.nvswitches == 2);  // one NVLink fabric per rack
  CHECK(counts.nics == 144);      // one NIC per GPU
  // GPU 0 (tray 0) and GPU 71 (tray 17) meet over the rack's switch; GPU 72 is the next rack.
  CHECK(f.topology.domain_of(71) == 0);
  CHECK(f.topology.domain_of(72) == 1);
  const Route inside = f.topology.route(0, 71);
  CHECK(inside.size() == 2);
  CHECK(std::all_of(inside.begin(), inside.end(),
                    [&](LinkId id) { return f.topology.link(id).tier == LinkTier::kNvlink; }));
}

TEST_CASE("an all-to-all over the 72 GPUs of a rack runs at the NVLink rate of one GPU",
          "[collective][nvl72]") {
  // Pairwise exchange: each GPU sends S·71/72 and receives as much over its own NVLink, whose
  // effective rate is 721.8 GB/s; busbw = S·(n−1)/n / t is that rate, less the latency of a
  // few µs over an 8 GiB exchange (~12 ms).
  const test::PlanFixture f("gb200-nvl72", 72);
  const CollectivePlan plan = f.plan(CollectiveOp::kAllToAll, ranks_from(0, 72), 8 * kGiB);
  CHECK(plan.domains == 1);
  CHECK(nvlink_only(f.topology, plan));
  CHECK(busbw_GBps(f, plan) == Approx(kNvlinkEffectiveGBps).epsilon(0.01));
}

TEST_CASE("an all-reduce over a whole rack takes NVLink SHARP across all 72 GPUs",
          "[collective][nvl72]") {
  // NVLS: each GPU link carries S·(1 + 1/n) each way at nvls_efficiency (0.746) of the NVLink
  // rate, so busbw = 721.8 · 0.746 · 2(n−1)/(n+1): 838.0 GB/s at n = 8, the measured 8x B200
  // figure the efficiency was fitted to, and 1047.4 at n = 72. The rack profile holds NVLS
  // busbw at nvls_max_bus_GBps = 839.0 (the measured whole rack, gb200.json sources), so the
  // 72-rank all-reduce runs at the ceiling and the 8-rank one below it, unchanged.
  const test::PlanFixture f("gb200-nvl72", 72);
  const CollectivePlan plan = f.plan(CollectiveOp::kAllReduce, ranks_from(0, 72), 8 * kGiB);
  CHECK(plan.algorithm == Algorithm::kNvls);
  CHECK(nvlink_only(f.topology, plan));
  CHECK(busbw_GBps(f, plan) == Approx(839.0).epsilon(0.01));
  const CollectivePlan eight = f.plan(CollectiveOp::kAllReduce, ranks_from(0, 8), 8 * kGiB);
  CHECK(busbw_GBps(f, eight) == Approx(kNvlinkEffectiveGBps * 0.746 * 2.0 * 7 / 9).epsilon(0.01));
  CHECK(busbw_GBps(f, eight) == Approx(838.0).epsilon(0.01));
  // Without the ceiling (a profile that states none) the in-switch model alone.
  test::PlanFixture uncapped("gb200-nvl72", 72);
  uncapped.comm.nvls_max_bus_GBps = 0;
  const CollectivePlan free = uncapped.plan(CollectiveOp::kAllReduce, ranks_from(0, 72), 8 * kGiB);
  CHECK(busbw_GBps(uncapped, free) ==
        Approx(kNvlinkEffectiveGBps * 0.746 * 2.0 * 71 / 73).epsilon(0.01));
}

TEST_CASE("an expert group of 64 inside a rack stays off the NICs, one across racks does not",
          "[collective][nvl72]") {
  const test::PlanFixture f("gb200-nvl72", 144);
  const CollectivePlan inside = f.plan(CollectiveOp::kAllToAll, ranks_from(0, 64), 1 * kGiB);
  CHECK(inside.domains == 1);
  CHECK(nvlink_only(f.topology, inside));
  // 32 GPUs at the end of rack 0 and 32 at the start of rack 1: half of each GPU's exchange
  // crosses racks over its 400 Gb/s NIC (47 GB/s effective), far below NVLink.
  const CollectivePlan across = f.plan(CollectiveOp::kAllToAll, ranks_from(40, 64), 1 * kGiB);
  CHECK(across.domains == 2);
  CHECK_FALSE(nvlink_only(f.topology, across));
  CHECK(busbw_GBps(f, across) < busbw_GBps(f, inside) / 4);
}

TEST_CASE("between racks an all-reduce may not use NVLink SHARP", "[collective][nvl72]") {
  // NCCL enables multi-node NVLS only with IB SHARP (CollNet), which wallsim does not model
  // (hardware.md §4.5): two racks choose between ring and tree.
  const test::PlanFixture f("gb200-nvl72", 144);
  const GroupLayout layout = layout_group(f.topology, ranks_from(0, 144));
  CHECK(layout.domains() == 2);
  CHECK(layout.per_domain == 72);
  for (const PlanChoice choice : allowed_choices(f.topology, CollectiveOp::kAllReduce, layout)) {
    CHECK(choice.algorithm != Algorithm::kNvls);
  }
}
