// Times a step's communication on the network: collectives and pipeline transfers become
// NCCL-like plans (sim/network planner) executed by whichever NetworkModel the run chose.
//
// Symmetric fidelity replays one rank per class; the other ranks of its class run the same
// collectives and transfers at the same time on other GPUs. Each replayed collective or
// transfer is therefore started together with its copies (NetworkModel::start_instances), so
// links are charged by every copy that crosses them. The copies follow from the groups alone:
// a class is spanned by the rank's groups that hold no other replayed rank (its TP and DP×CP
// groups: rank offsets are linear in the coordinates), and a copy is the group, or the
// transfer, shifted by the offset of another rank of the class. In full fidelity every group
// member is replayed, so there are no copies.
#pragma once

#include <map>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

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
  using Instances = std::vector<CollectivePlan>;
  Instances collective_instances(GroupIndex group, std::uint32_t payload) const;
  CollectivePlan plan_group(const std::vector<int>& ranks, std::uint32_t payload) const;
  bool within_one_domain(const std::vector<int>& gpus) const;

  Engine& engine_;
  const Topology& topology_;
  const CommProfile& profile_;
  NetworkModel& network_;
  const StepProgram& program_;
  std::vector<double> capacities_;
  std::vector<std::vector<int>> class_offsets_;  // per replayed rank: see class_offsets()
  // Plans are the same every time a (group, payload) recurs: plan the replayed instance and
  // its copies once, and prepare them for the network model once.
  std::map<std::pair<GroupIndex, std::uint32_t>, NetworkModel::Prepared> collective_plans_;
  std::map<std::tuple<RankIndex, RankIndex, std::uint32_t>, NetworkModel::Prepared> transfer_plans_;
};

// Offsets from each replayed rank to the ranks of its class (see the header comment), 0 first,
// then ascending. `groups[g]` lists the replayed members of group g, `group_ranks[g]` every
// global rank of it.
std::vector<std::vector<int>> class_offsets(const std::vector<std::int64_t>& global_rank,
                                            const std::vector<std::vector<RankIndex>>& groups,
                                            const std::vector<std::vector<int>>& group_ranks);

}  // namespace wallsim::models
