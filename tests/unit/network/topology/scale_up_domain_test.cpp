// A scale-up (NVLink) domain spanning several nodes: NVLink within the domain, NICs of each
// GPU's own node between domains.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/network/topology/cluster_spec.hpp"
#include "sim/network/topology/topology.hpp"

using wallsim::ClusterSpec;
using wallsim::LinkTier;
using wallsim::Route;
using wallsim::Topology;

namespace {

ClusterSpec dgx_h100() {
  return wallsim::load_cluster_spec(std::string(WALLSIM_SOURCE_ROOT) +
                                    "/configs/clusters/dgx-h100.json");
}

// DGX H100 parts regrouped: nodes of 4 GPUs with 4 NICs, two nodes to an 8-GPU NVLink domain
// (the shape of a rack-scale system, scaled down). 16 GPUs: nodes 0-3, domains 0-1.
ClusterSpec two_node_domains() {
  ClusterSpec spec = dgx_h100();
  spec.gpus_per_node = 4;
  spec.nic.per_node = 4;
  spec.nvlink.domain_gpus = 8;
  return spec;
}

std::vector<LinkTier> tiers(const Topology& topology, const Route& route) {
  std::vector<LinkTier> out;
  for (auto id : route) out.push_back(topology.link(id).tier);
  return out;
}

std::vector<std::string> names(const Topology& topology, const Route& route) {
  std::vector<std::string> out;
  for (auto id : route) out.push_back(topology.link_name(id));
  return out;
}

constexpr auto kPcie = LinkTier::kPcie;
constexpr auto kNvlink = LinkTier::kNvlink;
constexpr auto kNicLeaf = LinkTier::kNicLeaf;

}  // namespace

TEST_CASE("a domain of two 4-GPU nodes has one NVSwitch and each node its own NICs",
          "[topology][domain]") {
  const Topology topology(two_node_domains(), 16);
  CHECK(topology.num_nodes() == 4);
  CHECK(topology.num_domains() == 2);
  CHECK(topology.gpus_per_domain() == 8);
  // GPU 5: node 5 / 4 = 1, domain 5 / 8 = 0; GPU 8 opens node 2 and domain 1.
  CHECK(topology.node_of(5) == 1);
  CHECK(topology.domain_of(5) == 0);
  CHECK(topology.domain_of(8) == 1);
  const auto counts = topology.counts();
  CHECK(counts.gpus == 16);
  CHECK(counts.nvswitches == 2);  // one per domain, not per node
  CHECK(counts.nics == 16);       // 4 nodes x 4 rails
  CHECK(counts.leaves == 4);      // one SU: one leaf per rail
}

TEST_CASE("GPUs on different nodes of one domain talk over NVLink through its switch",
          "[topology][domain]") {
  const Topology topology(two_node_domains(), 16);
  // GPU 0 (node 0) -> GPU 5 (node 1): both in domain 0, so GPU -> NVSwitch 0 -> GPU.
  const Route route = topology.route(0, 5);
  CHECK(tiers(topology, route) == std::vector{kNvlink, kNvlink});
  CHECK(names(topology, route) ==
        std::vector<std::string>{"gpu0 -> nvswitch0", "nvswitch0 -> gpu5"});
  CHECK(route == topology.nvlink_route(0, 5));
  CHECK(topology.is_connected_path(route));
  CHECK(topology.latency(route).ns() == Approx(600));  // one NVLink traversal (dgx-h100.json)
  // The second domain has its own switch.
  CHECK(names(topology, topology.route(15, 9)) ==
        std::vector<std::string>{"gpu15 -> nvswitch1", "nvswitch1 -> gpu9"});
  CHECK_THROWS_AS(topology.nvlink_route(7, 8), std::invalid_argument);
}

TEST_CASE("traffic between domains leaves through a NIC of the source node", "[topology][domain]") {
  const Topology topology(two_node_domains(), 16);
  // GPU 4 (node 1, rail 0) -> GPU 12 (node 3, rail 0): same rail, so NIC 1.0 -> leaf -> NIC 3.0.
  const Route same_rail = topology.route(4, 12);
  CHECK(tiers(topology, same_rail) == std::vector{kPcie, kNicLeaf, kNicLeaf, kPcie});
  CHECK(topology.link_name(same_rail.front()) == "gpu4 -> nic1.0");
  CHECK(topology.link_name(same_rail.back()) == "nic3.0 -> gpu12");
  CHECK(topology.latency(same_rail).ns() == Approx(150 + 300 + 150));  // NIC, leaf, NIC
}

TEST_CASE("PXN hops over NVLink only to the rail GPU of the same node", "[topology][domain]") {
  const Topology topology(two_node_domains(), 16);
  // GPU 1 (node 0, rail 1) -> GPU 10 (node 2, rail 2). Node 0's rail-2 GPU is GPU 2; GPU 6 is
  // on rail 2 in the same domain but on node 1, whose NICs GPU 1 does not use.
  const Route pxn = topology.route(1, 10);
  CHECK(names(topology, pxn) ==
        std::vector<std::string>{"gpu1 -> nvswitch0", "nvswitch0 -> gpu2", "gpu2 -> nic0.2",
                                 "nic0.2 -> leaf rail2/su0", "leaf rail2/su0 -> nic2.2",
                                 "nic2.2 -> gpu10"});
  // Through rail 3 from GPU 5 (node 1) to GPU 12 (node 3): node 1's rail-3 GPU is 7, node 3's
  // is 15, which forwards over domain 1's switch.
  const Route both_ends = topology.network_route(5, 12, 3);
  CHECK(names(topology, both_ends) ==
        std::vector<std::string>{"gpu5 -> nvswitch0", "nvswitch0 -> gpu7", "gpu7 -> nic1.3",
                                 "nic1.3 -> leaf rail3/su0", "leaf rail3/su0 -> nic3.3",
                                 "nic3.3 -> gpu15", "gpu15 -> nvswitch1", "nvswitch1 -> gpu12"});
}

TEST_CASE("every route of a multi-node domain cluster is a connected path", "[topology][domain]") {
  const Topology topology(two_node_domains(), 16);
  for (int src = 0; src < 16; ++src) {
    for (int dst = 0; dst < 16; ++dst) {
      INFO(src << " -> " << dst);
      const Route route = topology.route(src, dst);
      CHECK(topology.is_connected_path(route));
      // NVLink inside a domain; a NIC (PCIe link) as soon as the domains differ.
      const bool nvlink_only = std::all_of(route.begin(), route.end(), [&](auto id) {
        return topology.link(id).tier == LinkTier::kNvlink;
      });
      CHECK(nvlink_only == (topology.domain_of(src) == topology.domain_of(dst)));
      if (topology.node_of(src) == topology.node_of(dst)) continue;
      // The NIC path stays available between nodes of one domain too.
      for (int rail = 0; rail < 4; ++rail) {
        CHECK(topology.is_connected_path(topology.network_route(src, dst, rail)));
      }
    }
  }
}

TEST_CASE("a GPU count that ends inside a domain makes one partial domain", "[topology][domain]") {
  // 12 GPUs: 3 whole nodes; domain 0 = GPUs 0-7, domain 1 = GPUs 8-11.
  const Topology topology(two_node_domains(), 12);
  CHECK(topology.num_domains() == 2);
  CHECK(topology.counts().nvswitches == 2);
  CHECK(tiers(topology, topology.route(8, 11)) == std::vector{kNvlink, kNvlink});
  // GPU 7 -> GPU 8 leaves domain 0: PXN to GPU 4 (node 1, rail 0), NIC 1.0 -> leaf -> NIC 2.0.
  CHECK(tiers(topology, topology.route(7, 8)) ==
        std::vector{kNvlink, kNvlink, kPcie, kNicLeaf, kNicLeaf, kPcie});
}

TEST_CASE("without a domain size the domain is the node", "[topology][domain]") {
  ClusterSpec spec = dgx_h100();
  spec.gpus_per_node = 4;
  spec.nic.per_node = 4;
  const Topology topology(spec, 16);
  CHECK(topology.gpus_per_domain() == 4);
  CHECK(topology.num_domains() == topology.num_nodes());
  CHECK(topology.counts().nvswitches == 4);
  for (int gpu = 0; gpu < 16; ++gpu) CHECK(topology.domain_of(gpu) == topology.node_of(gpu));
  // GPU 0 -> GPU 5 crosses nodes, so it takes the network: PXN to GPU 1, node 0's rail-1 GPU.
  CHECK(tiers(topology, topology.route(0, 5)) ==
        std::vector{kNvlink, kNvlink, kPcie, kNicLeaf, kNicLeaf, kPcie});
  // Stating the domain as one node builds the same links.
  spec.nvlink.domain_gpus = 4;
  const Topology stated(spec, 16);
  REQUIRE(stated.num_links() == topology.num_links());
  for (wallsim::LinkId id = 0; id < topology.num_links(); ++id) {
    CHECK(stated.link_name(id) == topology.link_name(id));
  }
}
