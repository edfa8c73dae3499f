#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"
#include "sim/network/topology/cluster_spec.hpp"
#include "sim/network/topology/topology.hpp"

using wallsim::LinkTier;
using wallsim::Route;
using wallsim::Topology;

namespace {

const wallsim::ClusterSpec& dgx_h100() {
  static const wallsim::ClusterSpec spec = wallsim::load_cluster_spec(
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/clusters/dgx-h100.json");
  return spec;
}

std::vector<LinkTier> tiers(const Topology& topology, const Route& route) {
  std::vector<LinkTier> out;
  for (auto id : route) out.push_back(topology.link(id).tier);
  return out;
}

// Total capacity of one direction of a tier: the directed links of a connection come in
// pairs, so half of the tier's links point up.
double up_capacity_Bps(const Topology& topology, LinkTier tier) {
  double total = 0;
  for (const auto& link : topology.links()) {
    if (link.tier == tier) total += link.capacity_Bps;
  }
  return total / 2;
}

constexpr double kNdrPort_Bps = 400e9 / 8;  // one 400 Gb/s NDR port, bytes/s
constexpr auto kPcie = LinkTier::kPcie;
constexpr auto kNvlink = LinkTier::kNvlink;
constexpr auto kNicLeaf = LinkTier::kNicLeaf;
constexpr auto kLeafSpine = LinkTier::kLeafSpine;
constexpr auto kSpineCore = LinkTier::kSpineCore;

}  // namespace

TEST_CASE("one DGX H100 node has 8 GPUs, one NVSwitch domain, 8 NICs and its rail leaves",
          "[topology]") {
  const Topology topology(dgx_h100(), 8);
  const auto counts = topology.counts();
  CHECK(counts.gpus == 8);
  CHECK(counts.nvswitches == 1);
  CHECK(counts.nics == 8);
  CHECK(counts.leaves == 8);  // one (partial) SU: one leaf per rail
  CHECK(counts.spines == 0);
  CHECK(counts.cores == 0);
}

TEST_CASE("256 GPUs are one scalable unit: 8 rail leaves and no spine", "[topology]") {
  const Topology topology(dgx_h100(), 256);
  const auto counts = topology.counts();
  CHECK(topology.num_nodes() == 32);
  CHECK(counts.nics == 256);
  CHECK(counts.leaves == 8);
  CHECK(counts.spines == 0);
  CHECK_FALSE(topology.has_core_tier());
}

TEST_CASE("1024 GPUs are 4 SUs on two tiers, as in the SuperPOD switch table", "[topology]") {
  const Topology topology(dgx_h100(), 1024);
  const auto counts = topology.counts();
  // hardware.md §2.2, row "4 SUs": 32 leaves, 1024 node-leaf and 1024 leaf-spine cables, no core.
  CHECK(counts.leaves == 32);
  CHECK(counts.spines == 1);  // the pod's spine tier, aggregated into one vertex
  CHECK(counts.cores == 0);
  CHECK(up_capacity_Bps(topology, kNicLeaf) == Approx(1024 * kNdrPort_Bps));
  CHECK(up_capacity_Bps(topology, kLeafSpine) == Approx(1024 * kNdrPort_Bps));
}

TEST_CASE("4096 and 16,384 GPUs add a core tier with the table's cable capacity", "[topology]") {
  // hardware.md §2.2: 16 SUs -> 128 leaves, 4096 cables per tier; 64 SUs -> 512 leaves,
  // 16384 cables per tier. Pods of 8 SUs: 2 and 8 spine tiers under one core.
  struct Row {
    int gpus, leaves, pods;
  };
  for (const Row row : {Row{4096, 128, 2}, Row{16384, 512, 8}}) {
    INFO(row.gpus << " GPUs");
    const Topology topology(dgx_h100(), row.gpus);
    const auto counts = topology.counts();
    CHECK(counts.leaves == row.leaves);
    CHECK(counts.spines == row.pods);
    CHECK(counts.cores == 1);
    CHECK(topology.has_core_tier());
    CHECK(up_capacity_Bps(topology, kLeafSpine) == Approx(row.gpus * kNdrPort_Bps));
    CHECK(up_capacity_Bps(topology, kSpineCore) == Approx(row.gpus * kNdrPort_Bps));
  }
}

TEST_CASE("oversubscription divides the aggregated up-link capacity", "[topology]") {
  auto spec = dgx_h100();
  spec.fabric.leaf_oversubscription = 2;
  spec.fabric.spine_oversubscription = 4;
  const Topology topology(spec, 4096);
  // Leaf up = 4096 ports / 2; spine up = that / 4.
  CHECK(up_capacity_Bps(topology, kLeafSpine) == Approx(4096 * kNdrPort_Bps / 2));
  CHECK(up_capacity_Bps(topology, kSpineCore) == Approx(4096 * kNdrPort_Bps / 8));
}

TEST_CASE("GPUs of one node talk over NVLink through the NVSwitch", "[topology]") {
  const Topology topology(dgx_h100(), 16);
  const Route route = topology.route(3, 5);
  CHECK(tiers(topology, route) == std::vector{kNvlink, kNvlink});
  CHECK(topology.link(route[0]).capacity_Bps == Approx(450e9));
  CHECK(topology.latency(route).ns() == Approx(600));  // node.nvlink.latency_ns
  CHECK(topology.route(3, 3).empty());
}

TEST_CASE("same-rail traffic inside one SU crosses exactly one leaf", "[topology]") {
  const Topology topology(dgx_h100(), 256);
  // GPU 2 (node 0, rail 2) -> GPU 250 (node 31, rail 2): GPU->NIC->leaf->NIC->GPU.
  const Route route = topology.route(2, 250);
  CHECK(tiers(topology, route) == std::vector{kPcie, kNicLeaf, kNicLeaf, kPcie});
  CHECK(topology.link(route[1]).capacity_Bps == Approx(kNdrPort_Bps));
  // NIC 150 ns + one switch 300 ns + NIC 150 ns (dgx-h100.json).
  CHECK(topology.latency(route).ns() == Approx(600));
}

TEST_CASE("same-rail traffic between SUs goes up to the spine and back", "[topology]") {
  const Topology topology(dgx_h100(), 1024);
  // GPU 0 is in SU 0; GPU 256 is node 32, the first node of SU 1; both on rail 0.
  const Route route = topology.route(0, 256);
  CHECK(tiers(topology, route) ==
        std::vector{kPcie, kNicLeaf, kLeafSpine, kLeafSpine, kNicLeaf, kPcie});
  CHECK(topology.latency(route).ns() == Approx(150 + 3 * 300 + 150));  // leaf, spine, leaf
}

TEST_CASE("cross-rail traffic crosses NVLink first (PXN), then the destination's rail",
          "[topology]") {
  const Topology topology(dgx_h100(), 256);
  // GPU 1 (node 0, rail 1) -> GPU 10 (node 1, rail 2): over NVLink to GPU 2, the node's
  // rail-2 GPU, then out through the rail-2 NIC.
  const Route route = topology.route(1, 10);
  CHECK(tiers(topology, route) == std::vector{kNvlink, kNvlink, kPcie, kNicLeaf, kNicLeaf, kPcie});
  CHECK(route == topology.network_route(1, 10, 2));
  const Route from_rail_gpu = topology.route(2, 10);
  CHECK(Route(route.begin() + 2, route.end()) == from_rail_gpu);
  // Through a third rail, NVLink is crossed at both ends.
  CHECK(tiers(topology, topology.network_route(1, 10, 5)) ==
        std::vector{kNvlink, kNvlink, kPcie, kNicLeaf, kNicLeaf, kPcie, kNvlink, kNvlink});
}

TEST_CASE("traffic between pods reaches the core", "[topology]") {
  const Topology topology(dgx_h100(), 4096);
  // Node 256 = SU 8 = pod 1.
  REQUIRE(topology.pod_of_node(topology.node_of(2048)) == 1);
  const Route route = topology.route(0, 2048);
  CHECK(tiers(topology, route) == std::vector{kPcie, kNicLeaf, kLeafSpine, kSpineCore, kSpineCore,
                                              kLeafSpine, kNicLeaf, kPcie});
  CHECK(topology.latency(route).ns() == Approx(150 + 5 * 300 + 150));
}

TEST_CASE("every rule-based route is a connected path of the Boost graph", "[topology]") {
  const Topology topology(dgx_h100(), 4096);
  const std::vector<int> gpus = {0, 1, 7, 8, 255, 256, 1023, 2047, 2048, 2049, 3000, 4095};
  for (int src : gpus) {
    for (int dst : gpus) {
      INFO(src << " -> " << dst);
      CHECK(topology.is_connected_path(topology.route(src, dst)));
      if (topology.node_of(src) == topology.node_of(dst)) continue;
      for (int rail = 0; rail < 8; ++rail) {
        CHECK(topology.is_connected_path(topology.network_route(src, dst, rail)));
      }
    }
  }
}

TEST_CASE("the path check rejects links that do not connect", "[topology]") {
  const Topology topology(dgx_h100(), 256);
  const Route to_node1 = topology.route(0, 8);
  const Route to_node2 = topology.route(0, 16);
  // Leave node 0, then arrive at node 2 through node 1's leaf->NIC link: not a walk.
  const Route broken = {to_node1[0], to_node1[1], to_node1[2], to_node2[3]};
  CHECK_FALSE(topology.is_connected_path(broken));
  CHECK_FALSE(topology.is_connected_path({static_cast<wallsim::LinkId>(topology.num_links())}));
}

TEST_CASE("a GPU count that is not a whole number of nodes is an InputError", "[topology]") {
  CHECK_THROWS_AS(Topology(dgx_h100(), 12), wallsim::InputError);
  CHECK_THROWS_WITH(Topology(dgx_h100(), 12), Catch::Contains("num_gpus = 12"));
  CHECK_THROWS_AS(Topology(dgx_h100(), 0), wallsim::InputError);
}

TEST_CASE("fewer GPUs than a node holds make one partial node", "[topology]") {
  const Topology topology(dgx_h100(), 4);
  CHECK(topology.num_nodes() == 1);
  CHECK(topology.counts().gpus == 4);
  CHECK(tiers(topology, topology.route(0, 3)) == std::vector{kNvlink, kNvlink});
}

TEST_CASE("a lost NIC's traffic moves to the next rail both nodes still have", "[topology]") {
  Topology topology(dgx_h100(), 32);
  // GPU 3 (node 0, rail 3) to GPU 11 (node 1, rail 3): normally NIC 0.3 -> leaf -> NIC 1.3.
  const Route before = topology.route(3, 11);
  topology.lose_nic(0, 3);
  CHECK(topology.nic_lost(0, 3));
  CHECK_FALSE(topology.nic_lost(1, 3));
  // Rail 4 on both ends: NVLink to GPU 4 (node 0's rail-4 GPU), NIC 0.4, leaf rail 4, NIC 1.4,
  // GPU 12, NVLink to GPU 11.
  const Route after = topology.route(3, 11);
  CHECK(after != before);
  CHECK(topology.is_connected_path(after));
  const auto nic_04 = topology.nic_links(0, 4);
  const auto nic_14 = topology.nic_links(1, 4);
  CHECK(std::count(after.begin(), after.end(), nic_04[0]) == 1);
  CHECK(std::count(after.begin(), after.end(), nic_14[1]) == 1);
  CHECK(tiers(topology, after) ==
        std::vector{kNvlink, kNvlink, kPcie, kNicLeaf, kNicLeaf, kPcie, kNvlink, kNvlink});
  // Rail 3 between two other nodes is unaffected.
  CHECK(topology.route(19, 27) == Topology(dgx_h100(), 32).route(19, 27));
  // Rail 7 lost on node 2 wraps round to rail 0.
  topology.lose_nic(2, 7);
  const auto nic_20 = topology.nic_links(2, 0);
  const Route wrapped = topology.network_route(23, 31, 7);
  CHECK(std::count(wrapped.begin(), wrapped.end(), nic_20[0]) == 1);
  CHECK_THROWS_AS(topology.lose_nic(4, 0), std::out_of_range);
}
