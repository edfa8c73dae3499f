#include "sim/network/model/collective_runner.hpp"

#include "sim/network/model/network_model.hpp"

namespace wallsim {

CollectiveResult run_collective(const std::string& network_model, const Topology& topology,
                                const CommProfile& profile, const CollectiveRequest& request) {
  Engine engine;
  const auto capacities = effective_capacities(topology, profile);
  auto model = make_network_model(network_model, engine, capacities);
  const CollectivePlan plan = plan_collective(topology, profile, capacities, request);
  Time end = Time::zero();
  model->start(plan, [&] { end = engine.now(); });
  engine.run();
  return CollectiveResult{plan.op, plan.algorithm, plan.protocol, plan.ranks, plan.bytes, end};
}

}  // namespace wallsim
