#include "models/placement_hint.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "models/expert_groups.hpp"

namespace wallsim::models {
namespace {

struct GroupKind {
  std::string name;
  RankGroups groups;
};

// The first group with ranks in two domains of `per_domain` GPUs, or nullptr.
const std::vector<std::int64_t>* crossing_group(const RankGroups& groups, std::int64_t per_domain) {
  for (const auto& group : groups) {
    if (leaves_domain(group, per_domain)) return &group;
  }
  return nullptr;
}

bool all_inside(const std::vector<GroupKind>& kinds, std::int64_t per_domain) {
  for (const GroupKind& kind : kinds) {
    if (crossing_group(kind.groups, per_domain)) return false;
  }
  return true;
}

std::string ranks_of(const std::vector<std::int64_t>& group) {
  std::int64_t low = group.front(), high = group.front();
  for (const std::int64_t rank : group) {
    low = std::min(low, rank);
    high = std::max(high, rank);
  }
  return std::to_string(low) + "-" + std::to_string(high);
}

}  // namespace

bool leaves_domain(const std::vector<std::int64_t>& ranks, std::int64_t per_domain) {
  for (const std::int64_t rank : ranks) {
    if (rank / per_domain != ranks.front() / per_domain) return true;
  }
  return false;
}

std::string placement_hint(const Layout& layout, int gpus_per_domain, int gpus_per_node) {
  // The groups are listed rank by rank; past a million GPUs (no cluster is that large) a
  // config is left without the hint rather than paying for the list.
  constexpr std::int64_t kMaxRanks = std::int64_t{1} << 20;
  if (gpus_per_domain <= gpus_per_node || gpus_per_node < 1) return "";
  if (layout.sizes.world() > kMaxRanks) return "";
  const RankLayout ranks = layout.ranks();
  std::vector<GroupKind> kinds;
  if (layout.sizes.tp > 1) kinds.push_back({"tensor-parallel", ranks.groups({Axis::tp})});
  if (layout.sizes.cp > 1) kinds.push_back({"TP x CP", ranks.groups({Axis::tp, Axis::cp})});
  if (layout.expert.etp * layout.expert.ep > 1) {
    kinds.push_back({"expert (ETP x EP)", expert_groups(layout).tp_ep});
  }
  std::vector<std::string> crossing;
  std::string example;
  for (const GroupKind& kind : kinds) {
    if (const auto* group = crossing_group(kind.groups, gpus_per_domain)) {
      crossing.push_back(kind.name + " groups of " + std::to_string(group->size()));
      if (example.empty()) example = ranks_of(*group);
    }
  }
  if (crossing.empty()) return "";
  // The largest share of whole nodes, below the domain, that keeps every group inside one.
  for (int share = gpus_per_domain - gpus_per_domain % gpus_per_node; share >= gpus_per_node;
       share -= gpus_per_node) {
    if (share == gpus_per_domain || !all_inside(kinds, share)) continue;
    std::string what;
    for (std::size_t i = 0; i < crossing.size(); ++i) {
      what += (i == 0 ? "" : i + 1 == crossing.size() ? " and " : ", ") + crossing[i];
    }
    return what + " leave their NVLink domain of " + std::to_string(gpus_per_domain) +
           " GPUs (ranks " + example + ", for one), so their traffic takes the network; " +
           "placement.gpus_per_domain = " + std::to_string(share) +
           " (the job on that many GPUs of each domain, whole nodes) keeps every one inside a "
           "domain";
  }
  return "";
}

}  // namespace wallsim::models
