#include "sim/network/collective/planner.hpp"

#include <algorithm>

#include "sim/core/input_error.hpp"
#include "sim/network/collective/nccl_latency.hpp"
#include "sim/network/collective/plan_builders.hpp"

namespace wallsim {
namespace {

constexpr Protocol kAllProtocols[] = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};

GroupShape shape_of(const GroupLayout& layout) {
  GroupShape shape{layout.ranks, layout.domains(), 0};
  for (const auto& members : layout.by_domain) {
    shape.max_per_node = std::max(shape.max_per_node, static_cast<int>(members.size()));
  }
  return shape;
}

// Bus-bandwidth cap of the choice in GB/s; 0 when uncapped.
double bus_cap_GBps(const CommProfile& profile, PlanChoice choice, int nodes) {
  const int index = node_count_index(nodes);
  if (choice.algorithm == Algorithm::kRing && choice.protocol == Protocol::kLL) {
    return profile.ring_ll_max_bus_GBps[index];
  }
  if (choice.algorithm != Algorithm::kTree) return 0;
  switch (choice.protocol) {
    case Protocol::kLL:
      return profile.tree_ll_max_bus_GBps[index];
    case Protocol::kLL128:
      return profile.tree_ll128_max_bus_GBps[index];
    case Protocol::kSimple:
      return profile.tree_simple_max_bus_GBps[index];
  }
  return 0;
}

double payload_efficiency(const CommProfile& profile, PlanChoice choice) {
  const int p = static_cast<int>(choice.protocol);
  switch (choice.algorithm) {
    case Algorithm::kRing:
      return profile.ring_protocol_efficiency[p];
    case Algorithm::kTree:
      return profile.tree_protocol_efficiency[p];
    default:
      return 1.0;
  }
}

Time latency_of(const CommProfile& profile, const CollectiveRequest& request,
                const GroupShape& shape, PlanChoice choice) {
  switch (choice.algorithm) {
    case Algorithm::kRing:
      return ring_latency(profile, request.op, choice.protocol, shape, request.bytes);
    case Algorithm::kTree:
      return tree_latency(profile, choice.protocol, shape);
    case Algorithm::kNvls:
      return nvls_latency(profile);
    case Algorithm::kPairwise:
    case Algorithm::kP2p:
      return p2p_latency(profile, shape.nodes > 1);
  }
  return Time::zero();
}

std::string describe(const std::vector<PlanChoice>& choices) {
  std::string text;
  for (const auto& choice : choices) {
    text += (text.empty() ? "" : ", ") + std::string(algorithm_name(choice.algorithm)) + "/" +
            protocol_name(choice.protocol);
  }
  return text;
}

}  // namespace

std::vector<PlanChoice> allowed_choices(const Topology& topology, CollectiveOp op,
                                        const GroupLayout& layout) {
  std::vector<PlanChoice> choices;
  switch (op) {
    case CollectiveOp::kAllReduce:
      for (Protocol p : kAllProtocols) choices.push_back({Algorithm::kRing, p});
      if (layout.domains() > 1) {
        for (Protocol p : kAllProtocols) choices.push_back({Algorithm::kTree, p});
      } else if (topology.spec().nvlink.nvls && layout.ranks > 2) {
        choices.push_back({Algorithm::kNvls, Protocol::kSimple});
      }
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
      for (Protocol p : kAllProtocols) choices.push_back({Algorithm::kRing, p});
      break;
    case CollectiveOp::kAllToAll:
      choices.push_back({Algorithm::kPairwise, Protocol::kSimple});
      break;
    case CollectiveOp::kSendRecv:
      choices.push_back({Algorithm::kP2p, Protocol::kSimple});
      break;
  }
  return choices;
}

CollectivePlan build_plan(const Topology& topology, const CommProfile& profile,
                          const CollectiveRequest& request, const GroupLayout& layout,
                          PlanChoice choice) {
  CollectivePlan plan;
  plan.op = request.op;
  plan.algorithm = choice.algorithm;
  plan.protocol = choice.protocol;
  plan.ranks = layout.ranks;
  plan.domains = layout.domains();
  plan.bytes = request.bytes;
  const GroupShape shape = shape_of(layout);
  plan.latency = latency_of(profile, request, shape, choice);
  if (const double cap = bus_cap_GBps(profile, choice, shape.nodes); cap > 0) {
    plan.min_transfer_time = Time::from_seconds(
        request.bytes * bus_bandwidth_factor(request.op, layout.ranks) / (cap * 1e9));
  }
  const BuildInput input{topology, layout, request.op, request.bytes,
                         payload_efficiency(profile, choice)};
  switch (choice.algorithm) {
    case Algorithm::kRing:
      plan.phases = build_ring(input);
      break;
    case Algorithm::kTree:
      plan.phases = build_tree(input);
      break;
    case Algorithm::kNvls:
      plan.phases = build_nvls(input, profile);
      break;
    case Algorithm::kPairwise:
      plan.phases = build_pairwise(input);
      break;
    case Algorithm::kP2p:
      plan.phases = build_p2p(input);
      break;
  }
  return plan;
}

CollectivePlan plan_collective(const Topology& topology, const CommProfile& profile,
                               const std::vector<double>& capacity_Bps,
                               const CollectiveRequest& request) {
  const GroupLayout layout = layout_group(topology, request.ranks);
  const auto allowed = allowed_choices(topology, request.op, layout);
  std::vector<PlanChoice> candidates;
  for (const auto& choice : allowed) {
    if (request.algorithm && *request.algorithm != choice.algorithm) continue;
    if (request.protocol && *request.protocol != choice.protocol) continue;
    candidates.push_back(choice);
  }
  if (candidates.empty()) {
    throw InputError("command line", "--algorithm/--protocol",
                     std::string(request.algorithm ? algorithm_name(*request.algorithm) : "any") +
                         "/" + (request.protocol ? protocol_name(*request.protocol) : "any"),
                     std::string("not available for ") + op_name(request.op) + " on " +
                         std::to_string(layout.domains()) +
                         " NVLink domain(s); available: " + describe(allowed));
  }
  CollectivePlan best;
  Time best_time = Time::max();
  for (const auto& choice : candidates) {
    CollectivePlan plan = build_plan(topology, profile, request, layout, choice);
    const Time time = contention_free_time(plan, capacity_Bps);
    if (time < best_time) {
      best_time = time;
      best = std::move(plan);
    }
  }
  return best;
}

CollectivePlan plan_transfer(const Topology& topology, const CommProfile& profile, int src, int dst,
                             double bytes) {
  CollectivePlan plan;
  plan.op = CollectiveOp::kSendRecv;
  plan.algorithm = Algorithm::kP2p;
  plan.protocol = Protocol::kSimple;
  plan.ranks = 2;
  plan.domains = topology.domain_of(src) == topology.domain_of(dst) ? 1 : 2;
  plan.bytes = bytes;
  plan.latency = p2p_latency(profile, plan.domains > 1);
  plan.phases.push_back(Phase{{Transfer{topology.route(src, dst), bytes}}});
  return plan;
}

}  // namespace wallsim
