// Times a step's communication on the network: collectives and pipeline transfers become
// NCCL-like plans (sim/network planner) executed by whichever NetworkModel the run chose.
#pragma once

#include <map>
#include <memory>
#include <utility>

#include "models/step/step_program.hpp"
#include "sim/graph/replay.hpp"
#include "sim/network/collective/planner.hpp"
#include "sim/network/model/network_model.hpp"

namespace wallsim::models {

class NetworkCommService final : public CommService {
 public:
  NetworkCommService(Engine& engine, const Topology& topology, const CommProfile& profile,
                     NetworkModel& network, const StepProgram& program);

  void start_collective(GroupIndex group, std::uint32_t payload, Done done) override;
  void start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload, Done done) override;

 private:
  const CollectivePlan& collective_plan(GroupIndex group, std::uint32_t payload);

  Engine& engine_;
  const Topology& topology_;
  const CommProfile& profile_;
  NetworkModel& network_;
  const StepProgram& program_;
  std::vector<double> capacities_;
  // Plans are the same every time a (group, payload) recurs: plan once.
  std::map<std::pair<GroupIndex, std::uint32_t>, CollectivePlan> collective_plans_;
  std::map<std::tuple<RankIndex, RankIndex, std::uint32_t>, CollectivePlan> transfer_plans_;
};

}  // namespace wallsim::models
