#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/input_error.hpp"
#include "sim/network/collective/planner.hpp"
#include "sim/network/model/collective_runner.hpp"
#include "sim/network/model/network_model.hpp"
#include "test_setup.hpp"

using namespace wallsim;

TEST_CASE("an unknown network model lists the valid ones", "[network][model]") {
  Engine engine;
  CHECK_THROWS_WITH(make_network_model("packet", engine, {}),
                    Catch::Contains("Valid values are: analytical, flow"));
}

TEST_CASE("analytical and flow agree on a collective running alone", "[network][model]") {
  const Topology topology(test::shipped_cluster("dgx-h100"), 32);
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kAllGather, CollectiveOp::kAllToAll,
                  CollectiveOp::kSendRecv}) {
    CollectiveRequest request{op, test::first_ranks(4, 8, 8), 256.0 * (1 << 20), {}, {}};
    const auto analytical = run_collective("analytical", topology, comm, request);
    const auto flow = run_collective("flow", topology, comm, request);
    CAPTURE(op_name(op));
    // Same plan, no other traffic: max-min sharing equals the most-loaded-link bound when
    // every flow of a phase is limited by the same kind of link.
    CHECK(flow.time.seconds() == Approx(analytical.time.seconds()).epsilon(0.02));
  }
}

TEST_CASE("two all-reduces on the same GPUs share links in the flow model only",
          "[network][model]") {
  const Topology topology(test::shipped_cluster("dgx-h100"), 8);
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  const auto capacities = effective_capacities(topology, comm);
  CollectiveRequest request{CollectiveOp::kAllReduce, test::first_ranks(1, 8, 8),
                            1024.0 * (1 << 20), Algorithm::kRing, Protocol::kSimple};
  const CollectivePlan plan = plan_collective(topology, comm, capacities, request);
  const Time alone = contention_free_time(plan, capacities);
  for (const char* name : {"analytical", "flow"}) {
    Engine engine;
    auto model = make_network_model(name, engine, capacities);
    Time first, second;
    model->start(plan, [&] { first = engine.now(); });
    model->start(plan, [&] { second = engine.now(); });
    engine.run();
    const Time data = alone - plan.latency;
    // Flow: both share every NVLink, so each moves its bytes at half rate: latency + 2 x data.
    const double expected =
        std::string(name) == "flow" ? (plan.latency + data + data).seconds() : alone.seconds();
    CAPTURE(name);
    CHECK(first.seconds() == Approx(expected).epsilon(1e-6));
    CHECK(second.seconds() == Approx(expected).epsilon(1e-6));
  }
}

TEST_CASE("multiplicity charges identical concurrent instances on shared links",
          "[network][model]") {
  const Topology topology(test::shipped_cluster("dgx-h100"), 8);
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  const auto capacities = effective_capacities(topology, comm);
  CollectiveRequest request{CollectiveOp::kAllGather, test::first_ranks(1, 8, 8), 512.0 * (1 << 20),
                            Algorithm::kRing, Protocol::kSimple};
  const CollectivePlan plan = plan_collective(topology, comm, capacities, request);
  const Time alone = contention_free_time(plan, capacities);
  Engine engine;
  auto model = make_network_model("flow", engine, capacities);
  Time end;
  model->start(
      plan, [&] { end = engine.now(); }, 3.0);
  engine.run();
  // Three instances on the same links: the data part takes three times as long.
  CHECK(end.seconds() == Approx((plan.latency + (alone - plan.latency) + (alone - plan.latency) +
                                 (alone - plan.latency))
                                    .seconds())
                             .epsilon(1e-6));
}

TEST_CASE("start_instances charges every copy on the links it crosses, in the flow model only",
          "[network][model]") {
  const Topology topology(test::shipped_cluster("dgx-h100"), 8);
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  const auto capacities = effective_capacities(topology, comm);
  const double bytes = 256.0 * (1 << 20);
  // The replayed send 0 -> 1 and its copy 2 -> 3; another send 2 -> 4 shares GPU 2's NVLink
  // with the copy only.
  const std::vector<CollectivePlan> instances{plan_transfer(topology, comm, 0, 1, bytes),
                                              plan_transfer(topology, comm, 2, 3, bytes)};
  const CollectivePlan other = plan_transfer(topology, comm, 2, 4, bytes);
  const Time alone = contention_free_time(instances.front(), capacities);
  const Time data = alone - instances.front().latency;
  for (const char* name : {"analytical", "flow"}) {
    Engine engine;
    auto model = make_network_model(name, engine, capacities);
    Time end;
    model->start_instances(instances, [&] { end = engine.now(); });
    model->start(other, [] {});
    engine.run();
    // Flow: the copy moves at half rate on GPU 2's uplink, and the instances move together,
    // so the replayed send takes twice its data time. Analytical: collectives never interact.
    const Time expected = std::string(name) == "flow" ? alone + data : alone;
    CAPTURE(name);
    CHECK(end.seconds() == Approx(expected.seconds()).epsilon(1e-6));
    // Both models count the copy's bytes on its own links.
    const Transfer& copy = instances[1].phases[0].transfers[0];
    CHECK(model->link_bytes()[copy.route.front()] ==
          Approx(copy.bytes + other.phases[0].transfers[0].bytes));
  }
}

TEST_CASE("merge_instances crosses every instance's links and rejects other shapes",
          "[network][model]") {
  const Topology topology(test::shipped_cluster("dgx-h100"), 16);
  const CommProfile comm = test::shipped_profile("h100-sxm").comm;
  const double bytes = 64.0 * (1 << 20);
  const std::vector<CollectivePlan> copies{plan_transfer(topology, comm, 0, 1, bytes),
                                           plan_transfer(topology, comm, 2, 3, bytes)};
  const CollectivePlan merged = merge_instances(copies);
  const Route& a = copies[0].phases[0].transfers[0].route;
  const Route& b = copies[1].phases[0].transfers[0].route;
  Route expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  CHECK(merged.phases[0].transfers[0].route == expected);
  CHECK(merged.phases[0].transfers[0].bytes == copies[0].phases[0].transfers[0].bytes);
  // A send across nodes has another latency: not a copy of an NVLink send.
  const std::vector<CollectivePlan> mixed{copies[0], plan_transfer(topology, comm, 0, 8, bytes)};
  CHECK_FALSE(same_shape(mixed[0], mixed[1]));
  CHECK_THROWS_AS(merge_instances(mixed), std::invalid_argument);
}
