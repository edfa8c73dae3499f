#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sim/network/flow/flow_network.hpp"
#include "sim/network/model/network_model.hpp"

namespace wallsim {

// Flow-level execution (see network_model.hpp): after the plan's latency, each phase's
// transfers start together as flows on a shared FlowNetwork; the next phase starts when the
// last flow of the previous one ends. The collective ends no earlier than latency plus the
// plan's minimum transfer time (protocol caps).
//
// Copies of a collective are merged into the replayed instance's transfers (merge_instances).
// Transfers of a phase with equal bytes whose routes cross links of the same capacities in the
// same order (images of one another under the topology's symmetry) start as one class
// (FlowNetwork::start_group), which the network solves as one weighted flow while its members
// provably share one rate. Merging and grouping happen once per prepared collective.
class FlowModel final : public NetworkModel {
 public:
  FlowModel(Engine& engine, std::vector<double> capacity_Bps)
      : engine_(engine), capacity_Bps_(capacity_Bps), network_(engine, std::move(capacity_Bps)) {}
  const char* name() const override { return "flow"; }
  void start(const CollectivePlan& plan, Done done, double multiplicity) override;
  Prepared prepare(std::span<const CollectivePlan> instances) const override;
  void start_prepared(const Prepared& prepared, Done done) override;

  const FlowNetwork& network() const { return network_; }

 private:
  struct Plan;
  struct Run;
  void launch(std::shared_ptr<const Plan> plan, Done done, double multiplicity);
  void start_phase(const std::shared_ptr<Run>& run);
  void finish(const std::shared_ptr<Run>& run);
  std::shared_ptr<const Plan> make_plan(const CollectivePlan& merged) const;

  Engine& engine_;
  std::vector<double> capacity_Bps_;  // per link, as the network has them
  FlowNetwork network_;
};

}  // namespace wallsim
