// What a GPU type's communication library achieves on the wires: the `comm` section of a
// calibration profile.
//
// Defaults come from NCCL's own performance model (hardware.md §4, NCCL v2.30.7-1
// src/graph/tuning.cc) and from measured nccl-tests figures (hardware.md §3); `wallsim
// calibrate` can refit them. Arrays indexed by protocol are ordered {LL, LL128, Simple};
// arrays indexed by node count are {1 node, 2 nodes, 3 or more nodes}, as NCCL indexes its caps.
#pragma once

#include <array>

#include "sim/network/collective/collective.hpp"
#include "sim/network/topology/topology.hpp"

namespace wallsim {

class JsonNode;

using PerProtocol = std::array<double, kProtocolCount>;
using PerNodeCount = std::array<double, 3>;

// NCCL's latency model for one algorithm (tuning.cc baseLatencies / hwLatencies), µs.
struct AlgorithmLatency {
  PerProtocol base_us{};    // once per collective
  PerProtocol nvlink_us{};  // per intra-node step
  PerProtocol net_us{};     // per inter-node step
};

struct CommProfile {
  // Fraction of each tier's line rate that collectives reach (per direction).
  double nvlink_efficiency = 1;
  double pcie_efficiency = 1;
  double network_efficiency = 1;  // NIC, leaf, spine and core links
  // NVLink SHARP: fraction of the ideal in-switch all-reduce rate reached.
  double nvls_efficiency = 1;
  // NVLink SHARP all-reduce busbw ceiling in GB/s, whatever the group size; 0: none. A whole
  // NVL72 rack reaches no more busbw than 8 GPUs do (docs/reference/blackwell.md §6).
  double nvls_max_bus_GBps = 0;
  // Payload per wire byte for each protocol (LL carries 8 data bytes per 16-byte line).
  PerProtocol ring_protocol_efficiency{0.5, 0.92, 1.0};
  PerProtocol tree_protocol_efficiency{0.5, 0.92, 0.92};
  // Caps on bus bandwidth, GB/s (NCCL's llMaxBws and per-channel tree caps x channels).
  PerNodeCount ring_ll_max_bus_GBps{};
  PerNodeCount tree_ll_max_bus_GBps{};
  PerNodeCount tree_ll128_max_bus_GBps{};
  PerNodeCount tree_simple_max_bus_GBps{};
  AlgorithmLatency ring, tree, nvls, p2p;
  double net_overhead_us = 1.0;      // NCCL_NET_OVERHEAD; x3 for Simple
  double ring_plateau_factor = 1.4;  // multi-node ring Simple all-reduce latency factor
  int ring_channels = 24;

  // Effective capacity of a link of `tier` with line rate `line_Bps`.
  double effective_capacity_Bps(LinkTier tier, double line_Bps) const;
};

// Parses the `comm` section of a profile. Unknown keys are rejected.
CommProfile parse_comm_profile(const JsonNode& node);

// Every link's effective capacity, in link-id order.
std::vector<double> effective_capacities(const Topology& topology, const CommProfile& profile);

// Index into PerNodeCount arrays for a group spanning `nodes` nodes.
inline int node_count_index(int nodes) {
  return nodes <= 1 ? 0 : (nodes == 2 ? 1 : 2);
}

}  // namespace wallsim
