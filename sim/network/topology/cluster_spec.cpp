#include "sim/network/topology/cluster_spec.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim {
namespace {

// A scale-up domain is whole nodes on one NVSwitch fabric; absent, it is one node. Nodes
// without an NVSwitch have nothing to join them over NVLink.
std::optional<int> parse_domain_gpus(JsonObject& object, int gpus_per_node, bool nvswitch) {
  constexpr std::int64_t kMaxDomainGpus = 1 << 16;  // far beyond any NVLink domain
  const auto node = object.find("domain_gpus");
  if (!node) return std::nullopt;
  const auto gpus = static_cast<int>(node->as_integer(gpus_per_node, kMaxDomainGpus));
  if (gpus % gpus_per_node != 0) {
    node->fail("must be a multiple of gpus_per_node (" + std::to_string(gpus_per_node) + ")");
  }
  if (gpus > gpus_per_node && !nvswitch) {
    node->fail(
        "a domain of several nodes needs an NVSwitch: set nvswitch to true or domain_gpus to " +
        std::to_string(gpus_per_node));
  }
  return gpus;
}

// Bandwidths and latencies are finite by JsonNode's rules; a latency of zero is allowed (an
// ideal wire), a bandwidth of zero is not (nothing would ever arrive).
NvlinkSpec parse_nvlink(JsonObject object, int gpus_per_node) {
  NvlinkSpec nvlink;
  nvlink.bandwidth_GBps = object.positive("bandwidth_GBps");
  nvlink.latency_ns = object.number("latency_ns", 0);
  nvlink.nvswitch = object.boolean_or("nvswitch", true);
  nvlink.nvls = object.boolean_or("nvls", false);
  if (nvlink.nvls && !nvlink.nvswitch) {
    object.at("nvls").fail("NVLink SHARP needs an NVSwitch: set nvswitch to true or nvls to false");
  }
  nvlink.domain_gpus = parse_domain_gpus(object, gpus_per_node, nvlink.nvswitch);
  object.finish();
  return nvlink;
}

NicSpec parse_nic(JsonObject object, int gpus_per_node) {
  NicSpec nic;
  nic.per_node = static_cast<int>(object.integer("per_node", 1, gpus_per_node));
  nic.bandwidth_Gbps = object.positive("bandwidth_Gbps");
  nic.pcie_bandwidth_GBps = object.positive("pcie_bandwidth_GBps");
  nic.latency_ns = object.number("latency_ns", 0);
  object.finish();
  return nic;
}

FabricSpec parse_fabric(JsonObject object) {
  constexpr std::int64_t kMaxCount = 1 << 20;  // far beyond any real fabric; keeps ints safe
  FabricSpec fabric;
  fabric.scalable_unit_nodes =
      static_cast<int>(object.integer("scalable_unit_nodes", 1, kMaxCount));
  fabric.pod_scalable_units = static_cast<int>(object.integer("pod_scalable_units", 1, kMaxCount));
  fabric.leaf_oversubscription = object.number_or("leaf_oversubscription", 1.0, 1.0);
  fabric.spine_oversubscription = object.number_or("spine_oversubscription", 1.0, 1.0);
  fabric.switch_latency_ns = object.number("switch_latency_ns", 0);
  object.finish();
  return fabric;
}

// `sources` maps a key path to its citation; it is documentation, but a typo in its shape
// (a list, a number) is still worth reporting.
void check_sources(const std::optional<JsonNode>& sources) {
  if (!sources) return;
  if (!sources->is_object()) sources->fail("must be an object mapping key paths to citations");
  for (const auto& [key, value] : sources->json().items()) {
    if (!value.is_string()) {
      JsonNode(value, sources->file(), sources->path() + "." + key).fail("must be a string");
    }
  }
}

void parse_node(JsonObject object, ClusterSpec& spec) {
  constexpr std::int64_t kMaxGpusPerNode = 1024;  // far beyond any host
  spec.gpu = object.string("gpu");
  if (spec.gpu.empty()) object.at("gpu").fail("must name a GPU profile, e.g. \"h100-sxm\"");
  spec.gpus_per_node = static_cast<int>(object.integer("gpus_per_node", 1, kMaxGpusPerNode));
  spec.nvlink = parse_nvlink(JsonObject(object.at("nvlink")), spec.gpus_per_node);
  spec.nic = parse_nic(JsonObject(object.at("nic")), spec.gpus_per_node);
  spec.host_link_GBps = spec.nic.pcie_bandwidth_GBps;
  if (object.has("host_link_GBps")) spec.host_link_GBps = object.positive("host_link_GBps");
  if (object.has("host_memory_GBps")) spec.host_memory_GBps = object.positive("host_memory_GBps");
  object.finish();
}

}  // namespace

ClusterSpec parse_cluster_spec(const JsonNode& node) {
  JsonObject root(node);
  ClusterSpec spec;
  spec.name = root.string("name");
  root.string_or("description", "");
  check_sources(root.find("sources"));
  parse_node(JsonObject(root.at("node")), spec);
  spec.fabric = parse_fabric(JsonObject(root.at("fabric")));
  root.finish();
  return spec;
}

ClusterSpec load_cluster_spec(const std::string& path) {
  const nlohmann::json document = load_json_file(path);
  return parse_cluster_spec(JsonNode(document, path, ""));
}

}  // namespace wallsim
