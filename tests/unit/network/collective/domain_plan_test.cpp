// Collective plans on a scale-up domain of several nodes: NCCL's algorithms see the domain as
// one node, so its ranks meet over NVLink and only traffic between domains takes the NICs.
#include <catch2/catch.hpp>

#include <algorithm>

#include "sim/network/collective/nccl_latency.hpp"
#include "sim/network/collective/planner.hpp"
#include "test_setup.hpp"

using namespace wallsim;

namespace {

// DGX H100 parts regrouped: nodes of 4 GPUs with 4 NICs, two nodes to an 8-GPU NVLink domain.
ClusterSpec two_node_domains() {
  ClusterSpec spec = test::shipped_cluster("dgx-h100");
  spec.gpus_per_node = 4;
  spec.nic.per_node = 4;
  spec.nvlink.domain_gpus = 8;
  return spec;
}

using Fixture = test::PlanFixture;

bool nvlink_only(const Topology& topology, const Route& route) {
  return std::all_of(route.begin(), route.end(),
                     [&](LinkId id) { return topology.link(id).tier == LinkTier::kNvlink; });
}

bool has_choice(const std::vector<PlanChoice>& choices, Algorithm algorithm) {
  return std::any_of(choices.begin(), choices.end(),
                     [&](PlanChoice c) { return c.algorithm == algorithm; });
}

const std::vector<int> kDomain0 = {0, 1, 2, 3, 4, 5, 6, 7};  // nodes 0 and 1

}  // namespace

TEST_CASE("an all-reduce over the 8 GPUs of a two-node domain uses no NIC link",
          "[collective][domain]") {
  const Fixture f(two_node_domains(), 16);
  const GroupLayout layout = layout_group(f.topology, kDomain0);
  CHECK(layout.domains() == 1);
  CHECK(layout.per_domain == 8);
  const auto choices = allowed_choices(f.topology, CollectiveOp::kAllReduce, layout);
  // One domain with NVLink SHARP: ring and NVLS, no tree (there is nothing to cross).
  CHECK(has_choice(choices, Algorithm::kNvls));
  CHECK_FALSE(has_choice(choices, Algorithm::kTree));
  const CollectiveRequest request{CollectiveOp::kAllReduce, kDomain0, 64.0 * (1 << 20), {}, {}};
  for (const PlanChoice choice : choices) {
    CAPTURE(algorithm_name(choice.algorithm), protocol_name(choice.protocol));
    const CollectivePlan plan = build_plan(f.topology, f.comm, request, layout, choice);
    CHECK(plan.domains == 1);
    for (const auto& transfer : plan.phases.front().transfers) {
      CHECK(nvlink_only(f.topology, transfer.route));
    }
  }
}

TEST_CASE("a two-node domain plans an all-reduce as one 8-GPU node does", "[collective][domain]") {
  // Same NVLink links (450 GB/s, 600 ns), same profile, one domain of 8 ranks either way: the
  // tuner sees the same shape, so algorithm, latency, bytes and time agree.
  const Fixture domain(two_node_domains(), 16);
  const Fixture node(test::shipped_cluster("dgx-h100"), 8);
  for (double bytes : {4096.0, 256.0 * (1 << 20)}) {
    CAPTURE(bytes);
    const auto across_nodes = domain.plan(CollectiveOp::kAllReduce, kDomain0, bytes);
    const auto one_node = node.plan(CollectiveOp::kAllReduce, kDomain0, bytes);
    CHECK(across_nodes.algorithm == one_node.algorithm);
    CHECK(across_nodes.protocol == one_node.protocol);
    CHECK(same_shape(across_nodes, one_node));
    CHECK(contention_free_time(across_nodes, domain.capacities) ==
          contention_free_time(one_node, node.capacities));
  }
  // 256 MiB is far above the ~1.1 MB ring-LL/NVLS crossover (planner_test.cpp).
  CHECK(domain.plan(CollectiveOp::kAllReduce, kDomain0, 256.0 * (1 << 20)).algorithm ==
        Algorithm::kNvls);
}

TEST_CASE("a ring over two domains crosses between them on each GPU's own rail",
          "[collective][domain]") {
  const Fixture f(two_node_domains(), 16);
  const double bytes = 1 << 26;
  const auto plan = f.plan(CollectiveOp::kAllGather, test::first_ranks(2, 8, 8), bytes,
                           Algorithm::kRing, Protocol::kSimple);
  CHECK(plan.domains == 2);
  // All-gather: each rank sends (n-1)/n S = 15/16 S, 1/8 of it to the same position in the
  // other domain and 7/8 to its neighbour in its own domain (8 ranks per domain); ring Simple
  // puts one wire byte on the link per payload byte (h100-sxm profile).
  const double per_rank = bytes * 15 / 16;
  int between = 0, inside = 0;
  for (const auto& transfer : plan.phases.front().transfers) {
    if (nvlink_only(f.topology, transfer.route)) {
      ++inside;
      CHECK(transfer.bytes == Approx(per_rank * 7 / 8));
    } else {
      ++between;
      // GPU -> NIC -> leaf -> NIC -> GPU: same rail at both ends, no NVLink detour.
      CHECK(transfer.route.size() == 4);
      CHECK(transfer.bytes == Approx(per_rank / 8));
    }
  }
  CHECK(between == 16);
  CHECK(inside == 16);  // including GPU 3 -> 4 and 11 -> 12, which change node, not domain
}

TEST_CASE("a send between nodes of one domain is an NVLink point-to-point",
          "[collective][domain]") {
  const Fixture f(two_node_domains(), 16);
  const auto within = plan_transfer(f.topology, f.comm, 0, 5, 1 << 20);
  CHECK(within.domains == 1);
  CHECK(within.latency == p2p_latency(f.comm, false));
  CHECK(nvlink_only(f.topology, within.phases.front().transfers.front().route));
  const auto between = plan_transfer(f.topology, f.comm, 0, 8, 1 << 20);
  CHECK(between.domains == 2);
  CHECK(between.latency == p2p_latency(f.comm, true));
}

TEST_CASE("with the domain equal to the node, two nodes are two domains to the planner",
          "[collective][domain]") {
  ClusterSpec spec = two_node_domains();
  spec.nvlink.domain_gpus.reset();
  const Fixture f(spec, 16);
  const GroupLayout layout = layout_group(f.topology, kDomain0);
  CHECK(layout.domains() == 2);
  const auto choices = allowed_choices(f.topology, CollectiveOp::kAllReduce, layout);
  CHECK(has_choice(choices, Algorithm::kTree));
  CHECK_FALSE(has_choice(choices, Algorithm::kNvls));
  const auto send = plan_transfer(f.topology, f.comm, 0, 5, 1 << 20);
  CHECK(send.domains == 2);
  CHECK_FALSE(nvlink_only(f.topology, send.phases.front().transfers.front().route));
}
