// A cluster described as a node template plus fabric rules.
//
// One cluster file serves any GPU count: the node count follows from the number of GPUs a run
// asks for. Bandwidths here are line rates (what the datasheet says); the efficiencies NCCL
// achieves on them come from the calibration profile, not from the cluster.
//
// Two groupings of GPUs: a node is the GPUs sharing a host (its NICs and PCIe); a scale-up
// domain is the GPUs sharing one NVSwitch fabric (NVLink-reachable, NVLS possible). A domain
// is whole nodes: one node on DGX-class machines, several in a rack-scale NVLink system.
#pragma once

#include <optional>
#include <string>

namespace wallsim {

class JsonNode;

struct NvlinkSpec {
  double bandwidth_GBps = 0;  // per GPU, per direction, line rate (H100: 450)
  double latency_ns = 0;      // one GPU -> NVSwitch -> GPU traversal
  bool nvswitch = true;       // all GPUs of a domain meet in one non-blocking crossbar
  bool nvls = false;          // NVLink SHARP (in-switch reduction) available
  // GPUs of one scale-up domain, a multiple of gpus_per_node; unset: the domain is one node.
  std::optional<int> domain_gpus;
};

struct NicSpec {
  int per_node = 0;                // one NIC per GPU ("rail") on DGX-class nodes
  double bandwidth_Gbps = 0;       // per NIC, per direction, line rate (NDR: 400)
  double pcie_bandwidth_GBps = 0;  // GPU <-> NIC path, per direction
  double latency_ns = 0;           // NIC + cable, per traversal
};

struct FabricSpec {
  int scalable_unit_nodes = 32;       // nodes under one set of rail leaves
  int pod_scalable_units = 8;         // SUs under one spine tier; more adds a core tier
  double leaf_oversubscription = 1;   // leaf down-ports bandwidth / up-ports bandwidth
  double spine_oversubscription = 1;  // same, spine to core
  double switch_latency_ns = 0;       // per switch traversal
};

struct ClusterSpec {
  std::string name;
  std::string gpu;  // calibration profile name, e.g. "h100-sxm"
  int gpus_per_node = 8;
  // GPU <-> host memory, per direction, GB/s (node.host_link_GBps; default the NIC's PCIe
  // path, the same Gen5 x16 link on DGX-class nodes): activation offloading copies over it.
  double host_link_GBps = 0;
  // The host CPUs' DRAM bandwidth, GB/s, all sockets of a node together
  // (node.host_memory_GBps): the node's GPUs share it when their optimizer steps run on the CPU
  // (training.offload.optimizer_fraction). Absent: not known, and the CPU optimizer is refused.
  std::optional<double> host_memory_GBps;
  NvlinkSpec nvlink;
  NicSpec nic;
  FabricSpec fabric;

  // GPUs of one NVLink scale-up domain (gpus_per_node unless nvlink.domain_gpus says more).
  int gpus_per_domain() const { return nvlink.domain_gpus.value_or(gpus_per_node); }
};

// Parses a cluster JSON object (see configs/clusters/README.md for the keys). Unknown keys are
// rejected; errors throw InputError naming file, JSON path, value and what is allowed.
ClusterSpec parse_cluster_spec(const JsonNode& node);

// Loads and parses a cluster file.
ClusterSpec load_cluster_spec(const std::string& path);

}  // namespace wallsim
