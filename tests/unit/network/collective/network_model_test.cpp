#include <catch2/catch.hpp>

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
