#pragma once

#include "sim/network/model/network_model.hpp"

namespace wallsim {

// Alpha-beta without contention between collectives (see network_model.hpp).
class AnalyticalModel final : public NetworkModel {
 public:
  AnalyticalModel(Engine& engine, std::vector<double> capacity_Bps)
      : engine_(engine), capacity_Bps_(std::move(capacity_Bps)) {}
  const char* name() const override { return "analytical"; }
  void start(const CollectivePlan& plan, Done done, double multiplicity) override;
  Prepared prepare(std::span<const CollectivePlan> instances) const override;
  void start_prepared(const Prepared& prepared, Done done) override;

 private:
  Engine& engine_;
  std::vector<double> capacity_Bps_;
};

}  // namespace wallsim
