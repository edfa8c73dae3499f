#include "sim/network/collective/plan_builders.hpp"

namespace wallsim {
namespace {

Transfer make_transfer(const Topology& topology, int src, int dst, double bytes) {
  return Transfer{topology.route(src, dst), bytes};
}

// Inter-node hop leaving through the source GPU's own rail.
Transfer rail_transfer(const Topology& topology, int src, int dst, double bytes) {
  return Transfer{topology.network_route(src, dst, topology.rail_of(src)), bytes};
}

// Fraction of S each rank sends in a ring: 2(n-1)/n for all-reduce (reduce-scatter then
// all-gather, each n-1 steps of S/n), (n-1)/n for all-gather and reduce-scatter.
double ring_send_fraction(CollectiveOp op, int n) {
  const double steps = op == CollectiveOp::kAllReduce ? 2.0 * (n - 1) : n - 1.0;
  return steps / n;
}

std::vector<int> flatten(const GroupLayout& layout) {
  std::vector<int> ranks;
  for (const auto& members : layout.by_node)
    ranks.insert(ranks.end(), members.begin(), members.end());
  return ranks;
}

}  // namespace

// With several ranks per node, NCCL builds one ring per channel and rotates each ring's order
// inside the node so that every GPU's NIC carries one ring's node crossing (hardware.md §3.3:
// 8 NICs x 46-48 GB/s). Summed over the rings, each GPU sends (ppn-1)/ppn of its ring traffic
// B over NVLink to a local peer and 1/ppn of it over its own rail to the same position on the
// next node. With one node the ring is a plain NVLink ring; with uneven nodes a single ring in
// node order.
std::vector<Phase> build_ring(const BuildInput& input) {
  const auto& layout = input.layout;
  const double per_rank =
      input.bytes * ring_send_fraction(input.op, layout.ranks) / input.payload_efficiency;
  Phase phase;
  if (layout.nodes() == 1 || layout.per_node == 0) {
    const auto ranks = flatten(layout);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      phase.transfers.push_back(
          make_transfer(input.topology, ranks[i], ranks[(i + 1) % ranks.size()], per_rank));
    }
    return {phase};
  }
  const int ppn = layout.per_node;
  const int nodes = layout.nodes();
  for (int a = 0; a < nodes; ++a) {
    const auto& here = layout.by_node[a];
    const auto& next = layout.by_node[(a + 1) % nodes];
    for (int i = 0; i < ppn; ++i) {
      phase.transfers.push_back(rail_transfer(input.topology, here[i], next[i], per_rank / ppn));
      if (ppn > 1) {
        phase.transfers.push_back(make_transfer(input.topology, here[i], here[(i + 1) % ppn],
                                                per_rank * (ppn - 1) / ppn));
      }
    }
  }
  return {phase};
}

int double_binary_tree_parent(int k, int n, int tree) {
  if (tree == 0) return k == 0 ? -1 : (k - 1) / 2;
  const int mirrored = n - 1 - k;
  return mirrored == 0 ? -1 : n - 1 - (mirrored - 1) / 2;
}

// Each of the two trees carries half of S, reduced up and broadcast down, pipelined, so every
// tree edge carries S/2 in each direction, spread over the rails the two nodes share. Inside a
// node the ranks form a chain that carries S in each direction (both trees' halves).
std::vector<Phase> build_tree(const BuildInput& input) {
  const auto& layout = input.layout;
  const int nodes = layout.nodes();
  const double half = input.bytes / 2 / input.payload_efficiency;
  Phase phase;
  for (int tree = 0; tree < 2; ++tree) {
    for (int k = 0; k < nodes; ++k) {
      const int parent = double_binary_tree_parent(k, nodes, tree);
      if (parent < 0) continue;
      const auto& child_ranks = layout.by_node[k];
      const auto& parent_ranks = layout.by_node[parent];
      const std::size_t lanes = std::min(child_ranks.size(), parent_ranks.size());
      for (std::size_t i = 0; i < lanes; ++i) {
        const double bytes = half / static_cast<double>(lanes);
        phase.transfers.push_back(
            rail_transfer(input.topology, child_ranks[i], parent_ranks[i], bytes));
        phase.transfers.push_back(
            rail_transfer(input.topology, parent_ranks[i], child_ranks[i], bytes));
      }
    }
  }
  const double chain = input.bytes / input.payload_efficiency;
  for (const auto& members : layout.by_node) {
    for (std::size_t i = 0; i + 1 < members.size(); ++i) {
      phase.transfers.push_back(make_transfer(input.topology, members[i], members[i + 1], chain));
      phase.transfers.push_back(make_transfer(input.topology, members[i + 1], members[i], chain));
    }
  }
  return {phase};
}

// NVLS all-reduce: each GPU reduce-loads its S/n shard through the switch (the switch pulls
// S/n from every GPU: S of egress per GPU, S/n of ingress) and multicast-stores the result
// (S/n of egress, S of ingress). Per GPU link and direction: S (1 + 1/n), divided by the
// measured efficiency of the in-switch path.
std::vector<Phase> build_nvls(const BuildInput& input, double nvls_efficiency) {
  const auto ranks = flatten(input.layout);
  const double n = static_cast<double>(ranks.size());
  const double bytes = input.bytes * (1 + 1 / n) / nvls_efficiency;
  Phase phase;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int other = ranks[(i + 1) % ranks.size()];
    const Route out = input.topology.nvlink_route(ranks[i], other);
    const Route in = input.topology.nvlink_route(other, ranks[i]);
    phase.transfers.push_back(Transfer{{out.front()}, bytes});
    phase.transfers.push_back(Transfer{{in.back()}, bytes});
  }
  return {phase};
}

std::vector<Phase> build_pairwise(const BuildInput& input) {
  const auto ranks = flatten(input.layout);
  const double per_peer =
      input.bytes / static_cast<double>(ranks.size()) / input.payload_efficiency;
  Phase phase;
  for (int src : ranks) {
    for (int dst : ranks) {
      if (src != dst) phase.transfers.push_back(make_transfer(input.topology, src, dst, per_peer));
    }
  }
  return {phase};
}

std::vector<Phase> build_p2p(const BuildInput& input) {
  const auto ranks = flatten(input.layout);
  Phase phase;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int dst = ranks[(i + 1) % ranks.size()];
    phase.transfers.push_back(
        make_transfer(input.topology, ranks[i], dst, input.bytes / input.payload_efficiency));
  }
  return {phase};
}

}  // namespace wallsim
