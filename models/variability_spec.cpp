#include "models/variability_spec.hpp"

#include <map>
#include <set>
#include <string>

#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

// `kernel_cv`: one number for every compute kind, or an object by kind name.
void read_kernel_cv(const JsonNode& node, VariabilitySpec& spec) {
  if (node.is_number()) {
    spec.kernel_cv.fill(node.as_number(0, 1));
    return;
  }
  if (!node.is_object()) node.fail("must be a number in [0, 1] or an object by compute kind");
  JsonObject kinds(node);
  for (const auto& info : kOpCategories) {
    if (info.communication) continue;
    spec.kernel_cv[static_cast<std::size_t>(info.slot)] = kinds.number_or(info.name, 0, 0, 1);
  }
  kinds.finish();
}

Straggler read_straggler(const JsonNode& node, std::int64_t num_gpus, int gpus_per_node) {
  JsonObject object(node);
  Straggler straggler;
  const bool by_rank = object.has("rank");
  const bool by_node = object.has("node");
  if (by_rank == by_node) node.fail("give exactly one of \"rank\" and \"node\"");
  if (by_rank) {
    straggler.rank = object.integer("rank", 0, num_gpus - 1);
  } else {
    const std::int64_t nodes = (num_gpus + gpus_per_node - 1) / gpus_per_node;
    straggler.node = object.integer("node", 0, nodes - 1);
  }
  straggler.slowdown = object.number("slowdown", 1, 1000);
  object.finish();
  return straggler;
}

DegradedLink read_degraded_link(const JsonNode& node, std::int64_t num_gpus, int gpus_per_node,
                                int nics_per_node) {
  JsonObject object(node);
  DegradedLink link;
  const bool nic = object.has("nic");
  if (nic == object.has("nvlink")) node.fail("give exactly one of \"nic\" and \"nvlink\"");
  if (nic) {
    if (num_gpus <= gpus_per_node) {
      object.at("nic").fail("a job on one node sends nothing through its NICs");
    }
    JsonObject where(object.at("nic"));
    link.nic_node = where.integer("node", 0, num_gpus / gpus_per_node - 1);
    link.nic_rail = where.integer("rail", 0, nics_per_node - 1);
    where.finish();
  } else {
    JsonObject where(object.at("nvlink"));
    link.nvlink_rank = where.integer("rank", 0, num_gpus - 1);
    where.finish();
  }
  link.bandwidth_factor = object.number("bandwidth_factor", 1e-6, 1);
  object.finish();
  return link;
}

std::pair<std::int64_t, std::int64_t> read_lost_nic(const JsonNode& node, std::int64_t num_gpus,
                                                    int gpus_per_node, int nics_per_node) {
  if (num_gpus <= gpus_per_node) node.fail("a job on one node sends nothing through its NICs");
  JsonObject object(node);
  const std::int64_t where = object.integer("node", 0, num_gpus / gpus_per_node - 1);
  const std::int64_t rail = object.integer("rail", 0, nics_per_node - 1);
  object.finish();
  return {where, rail};
}

// Every node keeps at least one NIC, and every two nodes a rail they both still have, or the
// job could not run (NCCL could not connect them). Nodes that lost nothing have every rail.
void check_rails_in_common(const JsonNode& list,
                           const std::vector<std::pair<std::int64_t, std::int64_t>>& lost,
                           int nics_per_node) {
  std::map<std::int64_t, std::set<std::int64_t>> lost_rails;  // node -> its lost rails
  for (const auto& [node, rail] : lost) lost_rails[node].insert(rail);
  for (auto a = lost_rails.begin(); a != lost_rails.end(); ++a) {
    for (auto b = a; b != lost_rails.end(); ++b) {
      std::set<std::int64_t> either = a->second;
      either.insert(b->second.begin(), b->second.end());
      if (static_cast<std::int64_t>(either.size()) < nics_per_node) continue;
      list.fail(a == b ? "leaves node " + std::to_string(a->first) + " no NIC"
                       : "leaves nodes " + std::to_string(a->first) + " and " +
                             std::to_string(b->first) +
                             " no NIC rail in common: the job could not connect them");
    }
  }
}

}  // namespace

bool VariabilitySpec::random() const {
  if (gpu_cv > 0 || step_cv > 0 || collective_jitter > 0) return true;
  for (const double cv : kernel_cv) {
    if (cv > 0) return true;
  }
  return false;
}

VariabilitySpec parse_variability_spec(const JsonNode& node, std::int64_t num_gpus,
                                       int gpus_per_node, int nics_per_node) {
  JsonObject object(node);
  VariabilitySpec spec;
  spec.enabled = true;
  spec.seed = static_cast<std::uint64_t>(object.integer_or("seed", 0, 0));
  if (auto kernel = object.find("kernel_cv")) read_kernel_cv(*kernel, spec);
  spec.gpu_cv = object.number_or("gpu_cv", VariabilitySpec::kDefaultGpuCv, 0, 1);
  spec.step_cv = object.number_or("step_cv", VariabilitySpec::kDefaultStepCv, 0, 1);
  spec.collective_jitter = object.number_or("collective_jitter", 0, 0, 10);
  if (auto list = object.find("stragglers")) {
    if (!list->is_array()) list->fail("must be an array of {\"rank\" or \"node\", \"slowdown\"}");
    for (const auto& item : list->as_array()) {
      spec.stragglers.push_back(read_straggler(item, num_gpus, gpus_per_node));
    }
  }
  if (auto list = object.find("degraded_links")) {
    if (!list->is_array()) {
      list->fail(
          "must be an array of {\"nic\": {\"node\", \"rail\"} or \"nvlink\": {\"rank\"}, "
          "\"bandwidth_factor\"}");
    }
    for (const auto& item : list->as_array()) {
      spec.degraded_links.push_back(
          read_degraded_link(item, num_gpus, gpus_per_node, nics_per_node));
    }
  }
  if (auto list = object.find("lost_nics")) {
    if (!list->is_array()) list->fail("must be an array of {\"node\", \"rail\"}");
    for (const auto& item : list->as_array()) {
      spec.lost_nics.push_back(read_lost_nic(item, num_gpus, gpus_per_node, nics_per_node));
    }
    check_rails_in_common(*list, spec.lost_nics, nics_per_node);
  }
  object.finish();
  return spec;
}

}  // namespace wallsim::models
