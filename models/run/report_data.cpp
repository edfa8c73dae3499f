#include "models/run/report_data.hpp"

#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "models/placement_hint.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/op_category.hpp"

namespace wallsim::models {
namespace {

std::vector<std::string> stream_names() {
  std::vector<std::string> names;
  for (const StreamInfo& stream : kStreams) names.emplace_back(stream.name);
  return names;
}

bool crosses_domains(const RunConfig& config, const std::vector<std::int64_t>& ranks) {
  return leaves_domain(ranks, config.cluster.gpus_per_domain());
}

bool op_crosses_domains(const RunConfig& config, const StepProgram& program, RankIndex rank,
                        const Op& op) {
  if (op.kind == OpKind::kCollective) {
    const auto& members = program.group_ranks.at(op.group);
    return crosses_domains(config, std::vector<std::int64_t>(members.begin(), members.end()));
  }
  return crosses_domains(config, {program.global_rank.at(rank), program.global_rank.at(op.peer)});
}

InputError not_simulated(std::int64_t global_rank) {
  return InputError("command line", "--trace-ranks", std::to_string(global_rank),
                    "is not a simulated rank (symmetric fidelity simulates one rank per stage; "
                    "use --set simulation.fidelity=full to trace any rank)");
}

RankIndex simulated_index(const StepProgram& program, std::int64_t global_rank) {
  const auto found = std::find(program.global_rank.begin(), program.global_rank.end(), global_rank);
  return static_cast<RankIndex>(found - program.global_rank.begin());
}

void add_exposure(RunSummary& summary, const RunConfig& config, const StepProgram& program) {
  const RankIndex critical = simulated_index(program, summary.critical_rank);
  if (critical >= static_cast<RankIndex>(program.graphs.size())) return;
  std::map<int, bool> network;  // comm group -> crosses domains
  const OpGraph& graph = program.graphs[critical];
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& shared = graph.shared_op(i);
    if (shared.kind == OpKind::kCompute ||
        !is_communication(static_cast<OpCategory>(shared.category))) {
      continue;
    }
    const Op op = graph.op(i);  // with this rank's group and peer
    const int group = category_slot(static_cast<OpCategory>(op.category));
    network[group] = network[group] || op_crosses_domains(config, program, critical, op);
  }
  for (int g = 0; g < kCommGroupCount; ++g) {
    const double exposed = summary.time.exposed_comm_s[g];
    if (!network.count(g) && exposed <= 0) continue;
    summary.exposure_by_group.push_back(GroupExposure{category_name(category_at_slot(true, g)),
                                                      exposed, network[g] ? "network" : "nvlink"});
  }
}

void add_link_usage(RunSummary& summary, const Topology& topology,
                    const std::vector<double>& capacity_Bps,
                    const std::vector<double>& link_bytes) {
  const double step = summary.iteration_time_s > 0 ? summary.iteration_time_s : 1;
  std::array<TierUsage, kLinkTierCount> tiers{};
  std::vector<std::pair<LinkId, LinkUsage>> used;
  for (LinkId id = 0; id < link_bytes.size(); ++id) {
    if (link_bytes[id] <= 0) continue;
    const LinkTier tier = topology.link(id).tier;
    const double busy = capacity_Bps[id] > 0 ? link_bytes[id] / capacity_Bps[id] : 0;
    used.emplace_back(id, LinkUsage{"", link_tier_name(tier), link_bytes[id], busy, busy / step});
    TierUsage& usage = tiers[static_cast<int>(tier)];
    usage.bytes += link_bytes[id];
    usage.max_utilization = std::max(usage.max_utilization, busy / step);
    usage.mean_utilization += busy / step;
  }
  for (int t = 0; t < kLinkTierCount; ++t) {
    int links = 0;
    for (const Link& link : topology.links()) links += static_cast<int>(link.tier) == t;
    TierUsage usage = tiers[t];
    if (usage.bytes <= 0) continue;
    usage.tier = link_tier_name(static_cast<LinkTier>(t));
    usage.links = links;
    usage.mean_utilization /= links;
    summary.link_tiers.push_back(usage);
  }
  std::stable_sort(used.begin(), used.end(),
                   [](const auto& a, const auto& b) { return a.second.busy_s > b.second.busy_s; });
  used.resize(std::min(used.size(), kBusiestLinks));
  for (auto& [id, link] : used) {
    link.name = topology.link_name(id);  // named for the busiest only: names cost a lookup
    summary.busiest_links.push_back(link);
  }
}

// Global ranks below `world` (a range past it is refused before it is expanded).
std::vector<std::int64_t> parse_rank_list(const std::string& spec, std::int64_t world) {
  std::vector<std::int64_t> ranks;
  std::stringstream items(spec);
  std::string item;
  while (std::getline(items, item, ',')) {
    const auto dash = item.find('-');
    std::size_t used_first = 0, used_last = 0;
    try {
      const std::int64_t first = std::stoll(item.substr(0, dash), &used_first);
      const std::int64_t last =
          dash == std::string::npos ? first : std::stoll(item.substr(dash + 1), &used_last);
      const bool whole = used_first == (dash == std::string::npos ? item.size() : dash) &&
                         (dash == std::string::npos || used_last == item.size() - dash - 1);
      if (!whole || first < 0 || last < first) throw std::invalid_argument(item);
      if (last >= world) {
        throw InputError("command line", "--trace-ranks", std::to_string(last),
                         "is not a rank of this run (ranks 0-" + std::to_string(world - 1) + ")");
      }
      for (std::int64_t r = first; r <= last; ++r) ranks.push_back(r);
    } catch (const std::logic_error&) {
      throw InputError("command line", "--trace-ranks", spec,
                       "expected \"all\" or global ranks and ranges such as 0,8-15");
    }
  }
  return ranks;
}

}  // namespace

void add_communication_report(RunSummary& summary, const RunConfig& config,
                              const StepProgram& program, const Topology& topology,
                              const std::vector<double>& capacity_Bps,
                              const std::vector<double>& link_bytes) {
  add_exposure(summary, config, program);
  add_link_usage(summary, topology, capacity_Bps, link_bytes);
}

std::string rank_name(const RunConfig& config, std::int64_t global_rank) {
  const RankCoordinates c = config.layout.ranks().coordinates(global_rank);
  std::string name = "pp" + std::to_string(c.pp) + " tp" + std::to_string(c.tp) + " cp" +
                     std::to_string(c.cp) + " dp" + std::to_string(c.dp);
  if (config.layout.sizes.ep > 1) name += " ep" + std::to_string(c.ep);
  return name;
}

std::vector<RankIndex> representative_ranks(const StepProgram& program) {
  std::vector<RankIndex> ranks;
  std::set<std::int64_t> stages;
  for (RankIndex r = 0; r < static_cast<RankIndex>(program.graphs.size()); ++r) {
    if (stages.insert(program.stage[r]).second) ranks.push_back(r);
  }
  return ranks;
}

std::vector<RankIndex> select_trace_ranks(const StepProgram& program, const std::string& spec,
                                          bool full_fidelity, std::size_t full_limit) {
  const auto simulated = static_cast<RankIndex>(program.graphs.size());
  std::vector<RankIndex> ranks;
  if (spec == "all" || (spec.empty() && full_fidelity)) {
    const RankIndex count =
        spec == "all" ? simulated
                      : std::min<RankIndex>(simulated, static_cast<RankIndex>(full_limit));
    for (RankIndex r = 0; r < count; ++r) ranks.push_back(r);
    return ranks;
  }
  if (spec.empty()) return representative_ranks(program);
  for (std::int64_t global : parse_rank_list(spec, std::numeric_limits<std::int64_t>::max())) {
    const RankIndex r = simulated_index(program, global);
    if (r >= simulated) throw not_simulated(global);
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  }
  return ranks;
}

void check_trace_ranks(const RunConfig& config, const std::string& spec) {
  if (spec.empty() || spec == "all") return;
  const auto simulated = simulated_global_ranks(config.layout, config.simulation.fidelity);
  const std::set<std::int64_t> known(simulated.begin(), simulated.end());
  for (std::int64_t global : parse_rank_list(spec, config.num_gpus)) {
    if (!known.contains(global)) throw not_simulated(global);
  }
}

TraceInput trace_input(const RunConfig& config, const SimulationResult& result,
                       const std::vector<RankIndex>& ranks) {
  const StepProgram& program = result.program;
  TraceInput input;
  input.stream_names = stream_names();
  input.step_s = result.summary.iteration_time_s;
  for (RankIndex r : ranks) {
    const std::int64_t global = program.global_rank.at(r);
    input.ranks.push_back(TraceRank{rank_name(config, global), static_cast<int>(global),
                                    static_cast<int>(program.stage.at(r)), r, &program.graphs.at(r),
                                    &result.replay.ranks.at(r)});
  }
  input.comm_detail = [&config, &program](const TraceRank& rank, const Op& op) {
    const CommPayload& payload = program.payloads.at(op.payload);
    CommDetail detail;
    detail.op = op_name(payload.op);
    detail.bytes = payload.bytes;
    detail.ranks = op.kind == OpKind::kCollective
                       ? static_cast<int>(program.group_ranks.at(op.group).size())
                       : 2;
    detail.wire_bytes = payload.bytes * bus_bandwidth_factor(payload.op, detail.ranks);
    detail.crosses_domains = op_crosses_domains(config, program, rank.simulated, op);
    return detail;
  };
  return input;
}

}  // namespace wallsim::models
