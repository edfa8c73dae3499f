#pragma once

#include "sim/network/flow/flow_network.hpp"
#include "sim/network/model/network_model.hpp"

namespace wallsim {

// Flow-level execution (see network_model.hpp): after the plan's latency, each phase's
// transfers start together as flows on a shared FlowNetwork; the next phase starts when the
// last flow of the previous one ends. The collective ends no earlier than latency plus the
// plan's minimum transfer time (protocol caps).
class FlowModel final : public NetworkModel {
 public:
  FlowModel(Engine& engine, std::vector<double> capacity_Bps)
      : engine_(engine), network_(engine, std::move(capacity_Bps)) {}
  const char* name() const override { return "flow"; }
  void start(const CollectivePlan& plan, Done done, double multiplicity) override;
  void start_instances(std::span<const CollectivePlan> instances, Done done) override;

  const FlowNetwork& network() const { return network_; }

 private:
  struct Run;
  void launch(CollectivePlan plan, Done done, double multiplicity);
  void start_phase(const std::shared_ptr<Run>& run);
  void finish(const std::shared_ptr<Run>& run);

  Engine& engine_;
  FlowNetwork network_;
};

}  // namespace wallsim
