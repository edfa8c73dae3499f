#include "models/run/network_comm_service.hpp"

namespace wallsim::models {

NetworkCommService::NetworkCommService(Engine& engine, const Topology& topology,
                                       const CommProfile& profile, NetworkModel& network,
                                       const StepProgram& program)
    : engine_(engine),
      topology_(topology),
      profile_(profile),
      network_(network),
      program_(program),
      capacities_(effective_capacities(topology, profile)) {}

const CollectivePlan& NetworkCommService::collective_plan(GroupIndex group, std::uint32_t payload) {
  const auto key = std::make_pair(group, payload);
  auto found = collective_plans_.find(key);
  if (found != collective_plans_.end()) return found->second;
  const CommPayload& what = program_.payloads.at(payload);
  CollectiveRequest request;
  request.op = what.op;
  request.bytes = what.bytes;
  request.ranks = program_.group_ranks.at(group);
  return collective_plans_.emplace(key, plan_collective(topology_, profile_, capacities_, request))
      .first->second;
}

void NetworkCommService::start_collective(GroupIndex group, std::uint32_t payload, Done done) {
  if (program_.group_ranks.at(group).size() < 2 || program_.payloads.at(payload).bytes <= 0) {
    engine_.schedule_after(Time::zero(), std::move(done));
    return;
  }
  network_.start(collective_plan(group, payload), std::move(done));
}

void NetworkCommService::start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload,
                                        Done done) {
  const auto key = std::make_tuple(src, dst, payload);
  auto found = transfer_plans_.find(key);
  if (found == transfer_plans_.end()) {
    const int src_gpu = static_cast<int>(program_.global_rank.at(src));
    const int dst_gpu = static_cast<int>(program_.global_rank.at(dst));
    found = transfer_plans_
                .emplace(key, plan_transfer(topology_, profile_, src_gpu, dst_gpu,
                                            program_.payloads.at(payload).bytes))
                .first;
  }
  network_.start(found->second, std::move(done));
}

}  // namespace wallsim::models
