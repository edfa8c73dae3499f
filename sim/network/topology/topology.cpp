#include "sim/network/topology/topology.hpp"

#include <stdexcept>
#include <string>

#include <boost/graph/adjacency_list.hpp>

#include "sim/core/input_error.hpp"
#include "sim/network/topology/fabric_shape.hpp"

namespace wallsim {

const char* link_tier_name(LinkTier tier) {
  switch (tier) {
    case LinkTier::kNvlink:
      return "nvlink";
    case LinkTier::kPcie:
      return "pcie";
    case LinkTier::kNicLeaf:
      return "nic_leaf";
    case LinkTier::kLeafSpine:
      return "leaf_spine";
    case LinkTier::kSpineCore:
      return "spine_core";
  }
  return "unknown";
}

namespace topology_detail {

// Vertices carry no data of their own: what a vertex is follows from its index range (see
// VertexLayout). Each directed edge carries the LinkId of its entry in links_, and edge_of_link
// lets a route be checked against the graph without searching it.
struct GraphData {
  using Adjacency =
      boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property, LinkId>;
  using Vertex = Adjacency::vertex_descriptor;
  using Edge = Adjacency::edge_descriptor;

  explicit GraphData(std::size_t vertices) : adjacency(vertices) {}

  // Whether `from` has an out-edge carrying link `id` (a walk over its adjacency).
  bool has_out_edge(Vertex from, LinkId id) const {
    for (const auto& edge : boost::make_iterator_range(boost::out_edges(from, adjacency))) {
      if (adjacency[edge] == id) return true;
    }
    return false;
  }

  Adjacency adjacency;
  std::vector<Edge> edge_of_link;
};

// Vertex indices by kind, laid out in blocks: GPUs, NVSwitches, NICs, leaves, spine tiers, core.
struct VertexLayout {
  explicit VertexLayout(const FabricShape& shape)
      : nvswitch_base(shape.gpus),
        nic_base(nvswitch_base + shape.domains),
        leaf_base(nic_base + shape.nics()),
        spine_base(leaf_base + shape.leaves()),
        core_base(spine_base + shape.spine_tiers()),
        total(core_base + shape.cores()) {}

  std::size_t gpu(int g) const { return static_cast<std::size_t>(g); }
  std::size_t nvswitch(int domain) const { return nvswitch_base + domain; }
  std::size_t nic(int nic_index) const { return nic_base + nic_index; }
  std::size_t leaf(int leaf_index) const { return leaf_base + leaf_index; }
  std::size_t spine(int pod) const { return spine_base + pod; }
  std::size_t core() const { return core_base; }

  std::size_t nvswitch_base, nic_base, leaf_base, spine_base, core_base, total;
};

}  // namespace topology_detail

struct Topology::Graph : topology_detail::GraphData {
  using GraphData::GraphData;
};

// Adds both directed links of each physical connection, to links_ and to the graph at once.
class TopologyBuilder {
 public:
  TopologyBuilder(const FabricShape& shape, std::vector<Link>& links,
                  topology_detail::GraphData& graph)
      : layout(shape), links_(links), graph_(graph) {
    // Every GPU has an NVLink and a PCIe connection; every NIC, leaf (when there is a spine
    // tier) and spine tier (when there is a core) has one up-connection.
    const std::size_t connections = 2 * std::size_t(shape.gpus) + shape.nics() +
                                    (shape.spine_tiers() > 0 ? shape.leaves() : 0) +
                                    (shape.cores() > 0 ? shape.spine_tiers() : 0);
    links_.reserve(2 * connections);
    graph_.edge_of_link.reserve(2 * connections);
  }

  // Returns the id of the a -> b link; the b -> a link is that id + 1.
  LinkId connect(std::size_t a, std::size_t b, double capacity_Bps, Time latency_ab,
                 Time latency_ba, LinkTier tier) {
    const LinkId forward = add(a, b, Link{capacity_Bps, latency_ab, tier});
    add(b, a, Link{capacity_Bps, latency_ba, tier});
    return forward;
  }

  const topology_detail::VertexLayout layout;

 private:
  LinkId add(std::size_t from, std::size_t to, Link link) {
    const auto id = static_cast<LinkId>(links_.size());
    links_.push_back(link);
    graph_.edge_of_link.push_back(boost::add_edge(from, to, id, graph_.adjacency).first);
    return id;
  }

  std::vector<Link>& links_;
  topology_detail::GraphData& graph_;
};

namespace {

FabricShape checked_shape(const ClusterSpec& spec, int num_gpus) {
  const int per_node = spec.gpus_per_node;
  if (num_gpus < 1) {
    throw InputError("cluster " + spec.name, "num_gpus", std::to_string(num_gpus),
                     "must be an integer >= 1");
  }
  if (num_gpus > per_node && num_gpus % per_node != 0) {
    throw InputError("cluster " + spec.name, "num_gpus", std::to_string(num_gpus),
                     "must be below gpus_per_node (" + std::to_string(per_node) +
                         ", one partial node) or a multiple of it");
  }
  return FabricShape(spec, num_gpus);
}

}  // namespace

// Latency placement: an NVLink traversal (GPU -> NVSwitch -> GPU) is split over its two links;
// a NIC traversal sits on the PCIe link that enters or leaves the NIC; a switch traversal sits
// on every link that enters a switch. A route's latency is then a plain sum over its links.
Topology::Topology(ClusterSpec spec, int num_gpus) : spec_(std::move(spec)), num_gpus_(num_gpus) {
  const FabricShape shape = checked_shape(spec_, num_gpus);
  num_nodes_ = shape.nodes;
  num_domains_ = shape.domains;
  graph_ = std::make_unique<Graph>(topology_detail::VertexLayout(shape).total);
  TopologyBuilder builder(shape, links_, *graph_);
  build_node_links(shape, builder);
  build_nic_links(shape, builder);
  build_switch_links(shape, builder);
}

void Topology::build_node_links(const FabricShape& shape, TopologyBuilder& builder) {
  const Time nvlink_half = Time::from_ns(spec_.nvlink.latency_ns / 2);
  const Time nic = Time::from_ns(spec_.nic.latency_ns);
  const double nvlink_Bps = spec_.nvlink.bandwidth_GBps * 1e9;
  const double pcie_Bps = spec_.nic.pcie_bandwidth_GBps * 1e9;
  const auto& at = builder.layout;
  for (auto* ids : {&gpu_up_, &gpu_down_, &pcie_up_, &pcie_down_}) ids->resize(shape.gpus);
  for (int g = 0; g < shape.gpus; ++g) {
    gpu_up_[g] = builder.connect(at.gpu(g), at.nvswitch(domain_of(g)), nvlink_Bps, nvlink_half,
                                 nvlink_half, LinkTier::kNvlink);
    gpu_down_[g] = gpu_up_[g] + 1;
    const int nic_index = node_of(g) * spec_.nic.per_node + rail_of(g);
    pcie_up_[g] =
        builder.connect(at.gpu(g), at.nic(nic_index), pcie_Bps, nic, nic, LinkTier::kPcie);
    pcie_down_[g] = pcie_up_[g] + 1;
  }
}

void Topology::build_nic_links(const FabricShape& shape, TopologyBuilder& builder) {
  const Time hop = Time::from_ns(spec_.fabric.switch_latency_ns);
  const auto& at = builder.layout;
  nic_up_.resize(shape.nics());
  nic_down_.resize(shape.nics());
  for (int n = 0; n < shape.nics(); ++n) {
    const int node = n / spec_.nic.per_node;
    const int leaf = shape.leaf_of(scalable_unit_of_node(node), n % spec_.nic.per_node);
    nic_up_[n] = builder.connect(at.nic(n), at.leaf(leaf), shape.nic_Bps(), hop, Time::zero(),
                                 LinkTier::kNicLeaf);
    nic_down_[n] = nic_up_[n] + 1;
  }
}

void Topology::build_switch_links(const FabricShape& shape, TopologyBuilder& builder) {
  const Time hop = Time::from_ns(spec_.fabric.switch_latency_ns);
  const auto& at = builder.layout;
  if (shape.spine_tiers() > 0) {
    leaf_up_.resize(shape.leaves());
    leaf_down_.resize(shape.leaves());
    for (int leaf = 0; leaf < shape.leaves(); ++leaf) {
      const int pod = shape.pod_of_scalable_unit(leaf / spec_.nic.per_node);
      leaf_up_[leaf] = builder.connect(at.leaf(leaf), at.spine(pod), shape.leaf_up_Bps(), hop, hop,
                                       LinkTier::kLeafSpine);
      leaf_down_[leaf] = leaf_up_[leaf] + 1;
    }
  }
  if (shape.cores() > 0) {
    spine_up_.resize(shape.spine_tiers());
    spine_down_.resize(shape.spine_tiers());
    for (int pod = 0; pod < shape.spine_tiers(); ++pod) {
      spine_up_[pod] = builder.connect(at.spine(pod), at.core(), shape.spine_up_Bps(), hop, hop,
                                       LinkTier::kSpineCore);
      spine_down_[pod] = spine_up_[pod] + 1;
    }
  }
}

namespace {

std::string vertex_name(const topology_detail::VertexLayout& at, const ClusterSpec& spec,
                        std::size_t v) {
  const auto index = [](std::size_t value, std::size_t base) {
    return std::to_string(value - base);
  };
  if (v < at.nvswitch_base) return "gpu" + std::to_string(v);
  if (v < at.nic_base) return "nvswitch" + index(v, at.nvswitch_base);
  if (v < at.leaf_base) {
    const std::size_t nic = v - at.nic_base;
    return "nic" + std::to_string(nic / spec.nic.per_node) + "." +
           std::to_string(nic % spec.nic.per_node);
  }
  if (v < at.spine_base) {
    const std::size_t leaf = v - at.leaf_base;
    return "leaf rail" + std::to_string(leaf % spec.nic.per_node) + "/su" +
           std::to_string(leaf / spec.nic.per_node);
  }
  if (v < at.core_base) return "spine pod" + index(v, at.spine_base);
  return "core";
}

}  // namespace

std::array<LinkId, 2> Topology::nic_links(int node, int rail) const {
  const auto n = static_cast<std::size_t>(node * spec_.nic.per_node + rail);
  if (rail < 0 || rail >= spec_.nic.per_node || n >= nic_up_.size()) {
    throw std::out_of_range("Topology::nic_links: no NIC " + std::to_string(node) + "." +
                            std::to_string(rail));
  }
  return {nic_up_[n], nic_down_[n]};
}

std::string Topology::link_name(LinkId id) const {
  const topology_detail::VertexLayout at(FabricShape(spec_, num_gpus_));
  const auto edge = graph_->edge_of_link.at(id);
  return vertex_name(at, spec_, boost::source(edge, graph_->adjacency)) + " -> " +
         vertex_name(at, spec_, boost::target(edge, graph_->adjacency));
}

Topology::~Topology() = default;
Topology::Topology(Topology&&) noexcept = default;
Topology& Topology::operator=(Topology&&) noexcept = default;

int Topology::scalable_unit_of_node(int node) const {
  return node / spec_.fabric.scalable_unit_nodes;
}

int Topology::pod_of_node(int node) const {
  return scalable_unit_of_node(node) / spec_.fabric.pod_scalable_units;
}

bool Topology::has_core_tier() const {
  return !spine_up_.empty();
}

Route Topology::nvlink_route(int src_gpu, int dst_gpu) const {
  if (domain_of(src_gpu) != domain_of(dst_gpu)) {
    throw std::invalid_argument("nvlink_route: GPUs " + std::to_string(src_gpu) + " and " +
                                std::to_string(dst_gpu) + " are in different NVLink domains");
  }
  if (src_gpu == dst_gpu) return {};
  return {gpu_up_[src_gpu], gpu_down_[dst_gpu]};
}

void Topology::lose_nic(int node, int rail) {
  nic_links(node, rail);  // throws std::out_of_range for a NIC that does not exist
  if (nic_lost_.empty()) nic_lost_.assign(nic_up_.size(), 0);
  nic_lost_[static_cast<std::size_t>(node * spec_.nic.per_node + rail)] = 1;
}

bool Topology::nic_lost(int node, int rail) const {
  return !nic_lost_.empty() &&
         nic_lost_[static_cast<std::size_t>(node * spec_.nic.per_node + rail)];
}

int Topology::rail_in_service(int src_node, int dst_node, int rail) const {
  if (nic_lost_.empty()) return rail;
  const int rails = spec_.nic.per_node;
  for (int step = 0; step < rails; ++step) {
    const int candidate = (rail + step) % rails;
    if (!nic_lost(src_node, candidate) && !nic_lost(dst_node, candidate)) return candidate;
  }
  throw std::invalid_argument("network_route: nodes " + std::to_string(src_node) + " and " +
                              std::to_string(dst_node) + " have no NIC rail in service in common");
}

Route Topology::network_route(int src_gpu, int dst_gpu, int requested_rail) const {
  const int src_node = node_of(src_gpu);
  const int dst_node = node_of(dst_gpu);
  if (src_node == dst_node) {
    throw std::invalid_argument("network_route: GPUs " + std::to_string(src_gpu) + " and " +
                                std::to_string(dst_gpu) + " are on the same node");
  }
  if (requested_rail < 0 || requested_rail >= spec_.nic.per_node) {
    throw std::invalid_argument("network_route: no rail " + std::to_string(requested_rail));
  }
  const int rail = rail_in_service(src_node, dst_node, requested_rail);
  // The GPU that owns the rail-`rail` NIC: the GPU itself when it is on that rail, otherwise
  // its own node's first GPU on the rail, reached over NVLink (PXN; one node is always within
  // one domain).
  auto rail_gpu = [&](int gpu, int node) {
    return rail_of(gpu) == rail ? gpu : node * spec_.gpus_per_node + rail;
  };
  const int src_proxy = rail_gpu(src_gpu, src_node);
  const int dst_proxy = rail_gpu(dst_gpu, dst_node);
  const int src_nic = src_node * spec_.nic.per_node + rail;
  const int dst_nic = dst_node * spec_.nic.per_node + rail;

  Route route;
  route.reserve(12);
  if (src_proxy != src_gpu) route.insert(route.end(), {gpu_up_[src_gpu], gpu_down_[src_proxy]});
  route.insert(route.end(), {pcie_up_[src_proxy], nic_up_[src_nic]});
  const int src_su = scalable_unit_of_node(src_node);
  const int dst_su = scalable_unit_of_node(dst_node);
  if (src_su != dst_su) {
    const int per_node = spec_.nic.per_node;
    route.push_back(leaf_up_[src_su * per_node + rail]);
    const int src_pod = pod_of_node(src_node);
    const int dst_pod = pod_of_node(dst_node);
    if (src_pod != dst_pod) route.insert(route.end(), {spine_up_[src_pod], spine_down_[dst_pod]});
    route.push_back(leaf_down_[dst_su * per_node + rail]);
  }
  route.insert(route.end(), {nic_down_[dst_nic], pcie_down_[dst_proxy]});
  if (dst_proxy != dst_gpu) route.insert(route.end(), {gpu_up_[dst_proxy], gpu_down_[dst_gpu]});
  return route;
}

Route Topology::route(int src_gpu, int dst_gpu) const {
  if (domain_of(src_gpu) == domain_of(dst_gpu)) return nvlink_route(src_gpu, dst_gpu);
  return network_route(src_gpu, dst_gpu, rail_of(dst_gpu));
}

Time Topology::latency(const Route& route) const {
  Time total = Time::zero();
  for (LinkId id : route) total += links_[id].latency;
  return total;
}

bool Topology::is_connected_path(const Route& route) const {
  const auto& g = graph_->adjacency;
  for (std::size_t i = 0; i < route.size(); ++i) {
    if (route[i] >= links_.size()) return false;
    const auto edge = graph_->edge_of_link[route[i]];
    if (!graph_->has_out_edge(boost::source(edge, g), route[i])) return false;
    if (i + 1 < route.size()) {
      const auto next = graph_->edge_of_link[route[i + 1]];
      if (boost::target(edge, g) != boost::source(next, g)) return false;
    }
  }
  return true;
}

Topology::Counts Topology::counts() const {
  const FabricShape shape(spec_, num_gpus_);
  return Counts{shape.gpus,     shape.domains,       shape.nics(),
                shape.leaves(), shape.spine_tiers(), shape.cores()};
}

}  // namespace wallsim
