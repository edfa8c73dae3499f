#include "models/expert_groups.hpp"

#include <algorithm>
#include <map>

namespace wallsim::models {
namespace {

ExpertGroups megatron_groups(const Layout& layout) {
  const ParallelSizes grid{layout.expert.etp, 1, layout.expert.ep, layout.expert.edp,
                           layout.sizes.pp};
  const RankLayout ranks(grid, layout.order);
  return {ranks.groups({Axis::ep}), ranks.groups({Axis::tp}), ranks.groups({Axis::dp}),
          ranks.groups({Axis::tp, Axis::ep})};
}

// Cuts each of `lines` into runs of `ep`; EP groups are the runs, EDP groups zip them.
void cut_into_runs(const RankGroups& lines, std::int64_t ep, ExpertGroups& out) {
  for (const auto& line : lines) {
    const auto n = static_cast<std::int64_t>(line.size());
    RankGroups zipped(static_cast<std::size_t>(ep));
    for (std::int64_t start = 0; start + ep <= n; start += ep) {
      std::vector<std::int64_t> run(line.begin() + start, line.begin() + start + ep);
      for (std::int64_t i = 0; i < ep; ++i) {
        zipped[static_cast<std::size_t>(i)].push_back(run[static_cast<std::size_t>(i)]);
      }
      out.ep.push_back(std::move(run));
    }
    for (auto& group : zipped) out.edp.push_back(std::move(group));
  }
}

ExpertGroups deepspeed_groups(const Layout& layout) {
  const RankLayout ranks = layout.ranks();
  ExpertGroups out;
  if (layout.expert.etp == 1) {
    // Consecutive ranks of each pipeline stage.
    std::map<std::int64_t, std::vector<std::int64_t>> stage_ranks;
    for (std::int64_t r = 0; r < ranks.world_size(); ++r) {
      stage_ranks[ranks.coordinates(r).pp].push_back(r);
    }
    RankGroups lines;
    for (auto& [stage, members] : stage_ranks) lines.push_back(std::move(members));
    cut_into_runs(lines, layout.expert.ep, out);
    for (std::int64_t r = 0; r < ranks.world_size(); ++r) out.etp.push_back({r});
  } else {
    cut_into_runs(ranks.groups({Axis::dp, Axis::cp}), layout.expert.ep, out);
    out.etp = ranks.groups({Axis::tp});
  }
  // ETP × EP: the EP groups of every ETP rank together.
  std::map<std::int64_t, std::size_t> ep_of;
  for (std::size_t g = 0; g < out.ep.size(); ++g) {
    for (std::int64_t r : out.ep[g]) ep_of[r] = g;
  }
  std::map<std::vector<std::int64_t>, bool> seen;
  for (const auto& etp_group : out.etp) {
    std::vector<std::int64_t> members;
    for (std::int64_t r : etp_group) {
      for (std::int64_t m : out.ep[ep_of[r]]) members.push_back(m);
    }
    std::sort(members.begin(), members.end());
    if (!seen.emplace(members, true).second) continue;
    out.tp_ep.push_back(std::move(members));
  }
  return out;
}

}  // namespace

ExpertGroups expert_groups(const Layout& layout) {
  return layout.expert.group_style == EpGroupStyle::kDeepSpeed ? deepspeed_groups(layout)
                                                               : megatron_groups(layout);
}

}  // namespace wallsim::models
