#include "models/run/network_comm_service.hpp"

#include <algorithm>
#include <set>

namespace wallsim::models {
namespace {

bool contains_all(const std::vector<int>& sorted_outer, const std::vector<int>& sorted_inner) {
  return std::includes(sorted_outer.begin(), sorted_outer.end(), sorted_inner.begin(),
                       sorted_inner.end());
}

// The groups that span a replayed rank's class: those whose only replayed member it is, minus
// any contained in another (a CP subgroup inside the DP×CP group), each once, sorted.
std::vector<std::vector<int>> spanning_groups(const std::vector<std::vector<int>>& candidates) {
  std::set<std::vector<int>> distinct;
  for (std::vector<int> ranks : candidates) {
    std::sort(ranks.begin(), ranks.end());
    distinct.insert(std::move(ranks));
  }
  std::vector<std::vector<int>> spanning;
  for (const auto& group : distinct) {
    const bool inside_another = std::any_of(distinct.begin(), distinct.end(), [&](const auto& o) {
      return o != group && contains_all(o, group);
    });
    if (!inside_another) spanning.push_back(group);
  }
  return spanning;
}

// {a + (x - origin) : a in offsets, x in group}: the class grows by the group's axis.
std::vector<int> add_axis(const std::vector<int>& offsets, const std::vector<int>& group,
                          int origin) {
  std::set<int> sums;
  for (int a : offsets) {
    for (int x : group) sums.insert(a + x - origin);
  }
  return {sums.begin(), sums.end()};
}

// The copies of `ranks` (sorted) on the other ranks of the class at `base + offsets`: shifted
// by ascending offsets, each taken when it stays on the cluster, inside the class if `tile`,
// and overlaps no group taken before. For a group inside the class this picks exactly the
// real groups of its kind (with rank offsets linear in the coordinates, the lowest rank not yet
// covered always has coordinate 0 on the group's axes).
std::vector<std::vector<int>> group_copies(const std::vector<int>& ranks,
                                           const std::vector<int>& offsets, int base, bool tile,
                                           int world) {
  std::set<int> in_class;
  for (int offset : offsets) in_class.insert(base + offset);
  std::set<int> covered(ranks.begin(), ranks.end());
  std::vector<std::vector<int>> copies;
  for (int offset : offsets) {
    if (offset == 0) continue;
    std::vector<int> copy;
    bool fits = true;
    for (int rank : ranks) {
      const int shifted = rank + offset;
      fits = fits && shifted < world && !covered.count(shifted) &&
             (!tile || in_class.count(shifted) > 0);
      copy.push_back(shifted);
    }
    if (!fits) continue;
    covered.insert(copy.begin(), copy.end());
    copies.push_back(std::move(copy));
  }
  return copies;
}

}  // namespace

std::vector<std::vector<int>> class_offsets(const std::vector<std::int64_t>& global_rank,
                                            const std::vector<std::vector<RankIndex>>& groups,
                                            const std::vector<std::vector<int>>& group_ranks) {
  std::vector<std::vector<std::vector<int>>> candidates(global_rank.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() == 1 && group_ranks[g].size() > 1) {
      candidates[groups[g].front()].push_back(group_ranks[g]);
    }
  }
  std::vector<std::vector<int>> offsets(global_rank.size(), std::vector<int>{0});
  for (std::size_t r = 0; r < global_rank.size(); ++r) {
    for (const auto& group : spanning_groups(candidates[r])) {
      offsets[r] = add_axis(offsets[r], group, static_cast<int>(global_rank[r]));
    }
    // Offsets are >= 0 when the replayed rank is the class's lowest; keep 0 first regardless.
    std::stable_partition(offsets[r].begin(), offsets[r].end(), [](int o) { return o == 0; });
  }
  return offsets;
}

bool NetworkCommService::within_one_domain(const std::vector<int>& gpus) const {
  return std::all_of(gpus.begin(), gpus.end(), [&](int gpu) {
    return topology_.domain_of(gpu) == topology_.domain_of(gpus.front());
  });
}

NetworkCommService::NetworkCommService(Engine& engine, const Topology& topology,
                                       const CommProfile& profile, NetworkModel& network,
                                       const StepProgram& program)
    : engine_(engine),
      topology_(topology),
      profile_(profile),
      network_(network),
      program_(program),
      capacities_(effective_capacities(topology, profile)),
      class_offsets_(
          !program.class_offsets.empty()
              ? program.class_offsets
              : class_offsets(program.global_rank, program.groups, program.group_ranks)) {}

CollectivePlan NetworkCommService::plan_group(const std::vector<int>& ranks,
                                              std::uint32_t payload) const {
  const CommPayload& what = program_.payloads.at(payload);
  CollectiveRequest request;
  request.op = what.op;
  request.bytes = what.bytes;
  request.ranks = ranks;
  return plan_collective(topology_, profile_, capacities_, request);
}

// The replayed instance, then its copies on the rest of the first replayed member's class (a
// group inside one class tiles it; a group across classes, such as the embedding group, is
// shifted with them). A copy whose plan differs in shape (another domain layout) is left out.
NetworkCommService::Instances NetworkCommService::collective_instances(
    GroupIndex group, std::uint32_t payload) const {
  const std::vector<int>& ranks = program_.group_ranks.at(group);
  Instances instances{plan_group(ranks, payload)};
  const RankIndex first = program_.groups.at(group).front();
  std::vector<int> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  const bool inside_class = program_.groups.at(group).size() == 1;
  // Inside one NVLink domain the copies run on other GPUs' identical, private links: they
  // load nothing the replayed instance uses, so they are not charged (this keeps the cost of a
  // symmetric run independent of the data-parallel degree for TP collectives).
  if (within_one_domain(sorted)) return instances;
  for (const auto& copy : group_copies(sorted, class_offsets_.at(first),
                                       static_cast<int>(program_.global_rank.at(first)),
                                       inside_class, topology_.num_gpus())) {
    CollectivePlan plan = plan_group(copy, payload);
    if (same_shape(plan, instances.front())) instances.push_back(std::move(plan));
  }
  return instances;
}

void NetworkCommService::start_collective(GroupIndex group, std::uint32_t payload, Done done) {
  if (program_.group_ranks.at(group).size() < 2 || program_.payloads.at(payload).bytes <= 0) {
    engine_.schedule_after(Time::zero(), std::move(done));
    return;
  }
  const auto key = std::make_pair(group, payload);
  auto found = collective_plans_.find(key);
  if (found == collective_plans_.end()) {
    found = collective_plans_.emplace(key, network_.prepare(collective_instances(group, payload)))
                .first;
  }
  network_.start_prepared(found->second, std::move(done));
}

// Copies of a pipeline transfer: the same send between the shifted ranks of both classes.
void NetworkCommService::start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload,
                                        Done done) {
  const auto key = std::make_tuple(src, dst, payload);
  auto found = transfer_plans_.find(key);
  if (found == transfer_plans_.end()) {
    const int src_gpu = static_cast<int>(program_.global_rank.at(src));
    const int dst_gpu = static_cast<int>(program_.global_rank.at(dst));
    const double bytes = program_.payloads.at(payload).bytes;
    Instances instances{plan_transfer(topology_, profile_, src_gpu, dst_gpu, bytes)};
    for (int offset : class_offsets_.at(src)) {
      if (offset == 0 || within_one_domain({src_gpu, dst_gpu})) continue;
      if (std::max(src_gpu, dst_gpu) + offset >= topology_.num_gpus()) continue;
      CollectivePlan plan =
          plan_transfer(topology_, profile_, src_gpu + offset, dst_gpu + offset, bytes);
      if (same_shape(plan, instances.front())) instances.push_back(std::move(plan));
    }
    found = transfer_plans_.emplace(key, network_.prepare(instances)).first;
  }
  network_.start_prepared(found->second, std::move(done));
}

}  // namespace wallsim::models
