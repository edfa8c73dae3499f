// The physical network of a cluster: GPUs, NVSwitch domains, NICs and a rail-optimized fat tree.
//
// Built (as a Boost.Graph) from a ClusterSpec and a GPU count. Every physical connection is two
// directed links, one per direction, each with a line-rate capacity and a latency; a link's
// tier says which kind of wire it is. Switch tiers are aggregated: the up-links of one leaf
// are one link whose capacity is the sum of its ports (ECMP spreading is assumed perfect),
// likewise for spine to core.
//
// Rules (hardware.md §2): GPU g sits on node g / gpus_per_node with local index (and rail)
// g % gpus_per_node, and in scale-up domain g / gpus_per_domain: the GPUs of a domain share
// one NVSwitch, those of a node share its NICs. A domain is one node on DGX-class clusters
// and whole consecutive nodes on rack-scale NVLink systems. Node n belongs to scalable unit
// n / scalable_unit_nodes; a pod is pod_scalable_units SUs under one spine tier; more than
// one pod adds a core tier. Leaf (rail r, SU s) connects the rail-r NIC of every node of SU s.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim {

using LinkId = std::uint32_t;
class FabricShape;
class TopologyBuilder;

enum class LinkTier : std::uint8_t {
  kNvlink,     // GPU <-> NVSwitch (per direction)
  kPcie,       // GPU <-> its NIC
  kNicLeaf,    // NIC <-> leaf switch
  kLeafSpine,  // leaf <-> spine tier (aggregated)
  kSpineCore,  // spine tier <-> core (aggregated)
};
inline constexpr int kLinkTierCount = 5;
const char* link_tier_name(LinkTier tier);

struct Link {
  double capacity_Bps = 0;  // line rate, bytes per second
  Time latency;
  LinkTier tier = LinkTier::kNvlink;
};

// The links a transfer crosses, in order.
using Route = std::vector<LinkId>;

class Topology {
 public:
  // Throws InputError when num_gpus < 1, or num_gpus > gpus_per_node and not a multiple of it.
  Topology(ClusterSpec spec, int num_gpus);
  ~Topology();
  Topology(Topology&&) noexcept;
  Topology& operator=(Topology&&) noexcept;

  const ClusterSpec& spec() const { return spec_; }
  int num_gpus() const { return num_gpus_; }
  int num_nodes() const { return num_nodes_; }
  int gpus_per_node() const { return spec_.gpus_per_node; }
  int node_of(int gpu) const { return gpu / spec_.gpus_per_node; }
  // The NVLink scale-up domain: GPUs on one NVSwitch fabric, whole nodes.
  int num_domains() const { return num_domains_; }
  int gpus_per_domain() const { return spec_.gpus_per_domain(); }
  int domain_of(int gpu) const { return gpu / spec_.gpus_per_domain(); }
  int local_index(int gpu) const { return gpu % spec_.gpus_per_node; }
  int rail_of(int gpu) const { return local_index(gpu) % spec_.nic.per_node; }
  int scalable_unit_of_node(int node) const;
  int pod_of_node(int node) const;
  bool has_core_tier() const;

  std::size_t num_links() const { return links_.size(); }
  const Link& link(LinkId id) const { return links_[id]; }
  const std::vector<Link>& links() const { return links_; }
  // The two directions of a GPU's NVLink (GPU -> NVSwitch, NVSwitch -> GPU) and of a NIC's
  // cable (NIC -> leaf, leaf -> NIC; NIC `rail` of `node`).
  std::array<LinkId, 2> nvlink_links(int gpu) const { return {gpu_up_[gpu], gpu_down_[gpu]}; }
  std::array<LinkId, 2> nic_links(int node, int rail) const;
  // "gpu3 -> nvswitch0", "nic1.2 -> leaf rail2/su0" (NIC node.rail): for reports.
  std::string link_name(LinkId id) const;

  // GPU to GPU over NVLink; both in one domain. Two links: src -> NVSwitch -> dst.
  Route nvlink_route(int src_gpu, int dst_gpu) const;

  // Takes NIC `rail` of `node` out of service (a failed port or cable). Traffic that would use
  // it moves to the next rail up (rail + 1, rail + 2, ... modulo the NICs per node) that is in
  // service on both nodes of the transfer, on both ends, as NCCL's PXN does for a GPU whose own
  // NIC it does not use: the data crosses NVLink to the GPU of that rail. Throws
  // std::out_of_range for a NIC that does not exist.
  void lose_nic(int node, int rail);
  bool nic_lost(int node, int rail) const;

  // GPU to GPU on other nodes, leaving the source node through its NIC of `rail`. When
  // `rail` is not the source GPU's own rail, the data first crosses NVLink to the GPU of its
  // node on that rail (NCCL's PXN); when it is not the destination's rail, it crosses NVLink
  // at the far end after arriving on the destination node's rail-`rail` NIC. Between nodes:
  // same SU -> one leaf; same pod -> leaf, spine, leaf; else leaf, spine, core, spine, leaf.
  // A lost NIC of `rail` on either node moves the transfer to the next rail both have
  // (lose_nic); std::invalid_argument when the two nodes have no rail in common.
  Route network_route(int src_gpu, int dst_gpu, int rail) const;

  // The default path: nvlink_route within one domain; otherwise network_route through the
  // destination's rail (PXN), as NCCL does for point-to-point traffic.
  Route route(int src_gpu, int dst_gpu) const;

  // Sum of link latencies along a route.
  Time latency(const Route& route) const;

  // Whether `route` is a walk in the graph: every link is an edge of it and each link ends at
  // the vertex where the next one starts. Rules above make routes; this checks them.
  bool is_connected_path(const Route& route) const;

  // Counts of vertices by kind, for tests and reports.
  struct Counts {
    int gpus = 0, nvswitches = 0, nics = 0, leaves = 0, spines = 0, cores = 0;
  };
  Counts counts() const;

 private:
  struct Graph;  // Boost.Graph adjacency list, kept out of this header
  // Construction steps, one per tier (topology.cpp).
  void build_node_links(const FabricShape& shape, TopologyBuilder& builder);
  void build_nic_links(const FabricShape& shape, TopologyBuilder& builder);
  void build_switch_links(const FabricShape& shape, TopologyBuilder& builder);

  ClusterSpec spec_;
  int num_gpus_ = 0;
  int num_nodes_ = 0;
  int num_domains_ = 0;
  std::vector<Link> links_;
  std::unique_ptr<Graph> graph_;
  // Link ids by endpoint, filled while building the graph (see topology.cpp).
  std::vector<LinkId> gpu_up_, gpu_down_;      // GPU -> its domain's NVSwitch, and back
  std::vector<LinkId> pcie_up_, pcie_down_;    // GPU -> NIC, NIC -> GPU (by GPU)
  std::vector<LinkId> nic_up_, nic_down_;      // NIC -> leaf, leaf -> NIC (by node*nics + rail)
  std::vector<LinkId> leaf_up_, leaf_down_;    // leaf -> spine, spine -> leaf (by leaf index)
  std::vector<LinkId> spine_up_, spine_down_;  // spine tier of a pod -> core, core -> spine
  std::vector<char> nic_lost_;                 // by node*nics + rail; empty while none is lost

  // `rail`, or the next rail in service on both nodes.
  int rail_in_service(int src_node, int dst_node, int rail) const;
};

}  // namespace wallsim
