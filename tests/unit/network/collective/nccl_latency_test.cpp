#include <catch2/catch.hpp>

#include "sim/network/collective/nccl_latency.hpp"
#include "test_setup.hpp"

using namespace wallsim;

TEST_CASE("ring latency matches NCCL's worked examples", "[collective][latency]") {
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  // hardware.md §4.7, 8x H100 one node: ring LL = 6.6 + 14 x 0.6 = 15.0 µs;
  // LL128 = 14.0 + 14 x 1.9 = 40.6 µs; Simple = 8.4 + 14 x 3.4 = 56.0 µs.
  const GroupShape one_node{8, 1, 8};
  CHECK(ring_latency(comm, CollectiveOp::kAllReduce, Protocol::kLL, one_node, 1024).us() ==
        Approx(15.0));
  CHECK(ring_latency(comm, CollectiveOp::kAllReduce, Protocol::kLL128, one_node, 1024).us() ==
        Approx(40.6));
  CHECK(ring_latency(comm, CollectiveOp::kAllReduce, Protocol::kSimple, one_node, 1024).us() ==
        Approx(56.0));
  // 16 nodes x 8 (128 ranks), Simple: 8.4 + (254 - 30) x max(3.4, 3 x 1.0) + 30 x 14 = 1190.0 µs,
  // and x1.4 once the per-channel chunk reaches 64 bytes (24 ch x 128 ranks x 64 B = 192 KiB).
  const GroupShape sixteen_nodes{128, 16, 8};
  CHECK(ring_latency(comm, CollectiveOp::kAllReduce, Protocol::kSimple, sixteen_nodes, 1024).us() ==
        Approx(1190.0));
  CHECK(ring_latency(comm, CollectiveOp::kAllReduce, Protocol::kSimple, sixteen_nodes, 1 << 30)
            .us() == Approx(1190.0 * 1.4));
  // Ring LL on 16 nodes: 6.6 + 224 x max(0.6, 1.0) + 30 x 2.7 = 311.6 µs (§4.7).
  CHECK(ring_latency(comm, CollectiveOp::kAllReduce, Protocol::kLL, sixteen_nodes, 1024).us() ==
        Approx(311.6));
}

TEST_CASE("tree and NVLS latency match NCCL's worked examples", "[collective][latency]") {
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  // §4.7: tree Simple on 16 nodes x 8 = 8.4 + 2 x (7 x 4.0 + 4 x 14) = 176.4 µs;
  // tree LL = 6.8 + 2 x (7 x 0.6 + 4 x 5.0) = 55.2 µs.
  const GroupShape sixteen_nodes{128, 16, 8};
  CHECK(tree_latency(comm, Protocol::kSimple, sixteen_nodes).us() == Approx(176.4));
  CHECK(tree_latency(comm, Protocol::kLL, sixteen_nodes).us() == Approx(55.2));
  CHECK(nvls_latency(comm).us() == Approx(25.0));
}

TEST_CASE("all-gather and reduce-scatter rings take n-1 steps, all-reduce 2(n-1)",
          "[collective][latency]") {
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  const GroupShape shape{8, 1, 8};
  // LL: 6.6 + 7 x 0.6 = 10.8 µs against 15.0 µs for all-reduce.
  CHECK(ring_latency(comm, CollectiveOp::kAllGather, Protocol::kLL, shape, 1024).us() ==
        Approx(10.8));
  CHECK(ring_latency(comm, CollectiveOp::kReduceScatter, Protocol::kLL, shape, 1024).us() ==
        Approx(10.8));
}
