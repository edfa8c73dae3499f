#include "sim/network/collective/comm_profile.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"

namespace wallsim {
namespace {

template <std::size_t N>
std::array<double, N> read_array(JsonObject& object, std::string_view key, double min) {
  const JsonNode node = object.at(key);
  const auto items = node.as_array();
  if (items.size() != N) node.fail("must be an array of " + std::to_string(N) + " numbers");
  std::array<double, N> values{};
  for (std::size_t i = 0; i < N; ++i) values[i] = items[i].as_number(min);
  return values;
}

PerProtocol read_protocol_efficiency(JsonObject& object, std::string_view key) {
  JsonObject inner(object.at(key));
  PerProtocol values{};
  const char* names[] = {"ll", "ll128", "simple"};
  for (int p = 0; p < kProtocolCount; ++p) values[p] = inner.number(names[p], 0.01, 1.0);
  inner.finish();
  return values;
}

AlgorithmLatency read_latency(JsonObject& table, std::string_view algorithm) {
  JsonObject inner(table.at(algorithm));
  AlgorithmLatency latency;
  latency.base_us = read_array<3>(inner, "base", 0.0);
  latency.nvlink_us = read_array<3>(inner, "nvlink", 0.0);
  latency.net_us = read_array<3>(inner, "net", 0.0);
  inner.finish();
  return latency;
}

void read_caps(JsonObject& object, CommProfile& profile) {
  JsonObject caps(object.at("max_bus_GBps"));
  profile.ring_ll_max_bus_GBps = read_array<3>(caps, "ring_ll", 0.001);
  profile.tree_ll_max_bus_GBps = read_array<3>(caps, "tree_ll", 0.001);
  profile.tree_ll128_max_bus_GBps = read_array<3>(caps, "tree_ll128", 0.001);
  profile.tree_simple_max_bus_GBps = read_array<3>(caps, "tree_simple", 0.001);
  caps.finish();
}

}  // namespace

double CommProfile::effective_capacity_Bps(LinkTier tier, double line_Bps) const {
  switch (tier) {
    case LinkTier::kNvlink:
      return line_Bps * nvlink_efficiency;
    case LinkTier::kPcie:
      return line_Bps * pcie_efficiency;
    case LinkTier::kNicLeaf:
    case LinkTier::kLeafSpine:
    case LinkTier::kSpineCore:
      return line_Bps * network_efficiency;
  }
  return line_Bps;
}

CommProfile parse_comm_profile(const JsonNode& node) {
  JsonObject object(node);
  object.find("sources");  // documentation only
  CommProfile profile;
  profile.nvlink_efficiency = object.number("nvlink_efficiency", 0.01, 1.0);
  profile.pcie_efficiency = object.number("pcie_efficiency", 0.01, 1.0);
  profile.network_efficiency = object.number("network_efficiency", 0.01, 1.0);
  profile.nvls_efficiency = object.number("nvls_efficiency", 0.01, 1.0);
  if (auto cap = object.find("nvls_max_bus_GBps")) {
    profile.nvls_max_bus_GBps = cap->as_positive_number();
  }
  {
    JsonObject efficiency(object.at("protocol_efficiency"));
    profile.ring_protocol_efficiency = read_protocol_efficiency(efficiency, "ring");
    profile.tree_protocol_efficiency = read_protocol_efficiency(efficiency, "tree");
    efficiency.finish();
  }
  read_caps(object, profile);
  {
    JsonObject latency(object.at("latency_us"));
    profile.ring = read_latency(latency, "ring");
    profile.tree = read_latency(latency, "tree");
    profile.nvls = read_latency(latency, "nvls");
    profile.p2p = read_latency(latency, "p2p");
    latency.finish();
  }
  profile.net_overhead_us = object.number("net_overhead_us", 0.0);
  profile.ring_plateau_factor = object.number("ring_plateau_factor", 1.0);
  profile.ring_channels = static_cast<int>(object.integer("ring_channels", 1, 64));
  object.finish();
  return profile;
}

std::vector<double> effective_capacities(const Topology& topology, const CommProfile& profile) {
  std::vector<double> capacities;
  capacities.reserve(topology.num_links());
  for (const Link& link : topology.links()) {
    capacities.push_back(profile.effective_capacity_Bps(link.tier, link.capacity_Bps));
  }
  return capacities;
}

}  // namespace wallsim
