#include "sim/network/collective/plan_builders.hpp"

#include <algorithm>

namespace wallsim {
namespace {

Transfer make_transfer(const Topology& topology, int src, int dst, double bytes) {
  return Transfer{topology.route(src, dst), bytes};
}

// Hop between domains leaving through the source GPU's own rail.
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
  for (const auto& members : layout.by_domain)
    ranks.insert(ranks.end(), members.begin(), members.end());
  return ranks;
}

}  // namespace

// With several ranks per domain, NCCL builds one ring per channel and rotates each ring's
// order inside the domain so that every GPU's NIC carries one ring's domain crossing
// (hardware.md §3.3: 8 NICs x 46-48 GB/s). Summed over the rings, each GPU sends (ppd-1)/ppd
// of its ring traffic B over NVLink to a peer of its domain and 1/ppd of it over its own rail
// to the same position on the next domain. With one domain the ring is a plain NVLink ring;
// with uneven domains a single ring in domain order.
std::vector<Phase> build_ring(const BuildInput& input) {
  const auto& layout = input.layout;
  const double per_rank =
      input.bytes * ring_send_fraction(input.op, layout.ranks) / input.payload_efficiency;
  Phase phase;
  if (layout.domains() == 1 || layout.per_domain == 0) {
    const auto ranks = flatten(layout);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      phase.transfers.push_back(
          make_transfer(input.topology, ranks[i], ranks[(i + 1) % ranks.size()], per_rank));
    }
    return {phase};
  }
  const int ppd = layout.per_domain;
  const int domains = layout.domains();
  for (int a = 0; a < domains; ++a) {
    const auto& here = layout.by_domain[a];
    const auto& next = layout.by_domain[(a + 1) % domains];
    for (int i = 0; i < ppd; ++i) {
      phase.transfers.push_back(rail_transfer(input.topology, here[i], next[i], per_rank / ppd));
      if (ppd > 1) {
        phase.transfers.push_back(make_transfer(input.topology, here[i], here[(i + 1) % ppd],
                                                per_rank * (ppd - 1) / ppd));
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
// tree edge carries S/2 in each direction, spread over the rails the two domains share. Inside
// a domain the ranks form a chain that carries S in each direction (both trees' halves).
std::vector<Phase> build_tree(const BuildInput& input) {
  const auto& layout = input.layout;
  const int domains = layout.domains();
  const double half = input.bytes / 2 / input.payload_efficiency;
  Phase phase;
  for (int tree = 0; tree < 2; ++tree) {
    for (int k = 0; k < domains; ++k) {
      const int parent = double_binary_tree_parent(k, domains, tree);
      if (parent < 0) continue;
      const auto& child_ranks = layout.by_domain[k];
      const auto& parent_ranks = layout.by_domain[parent];
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
  for (const auto& members : layout.by_domain) {
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
// measured efficiency of the in-switch path. With a busbw ceiling C the step takes at least
// S·2(n-1)/n / C: a link of effective capacity B then carries at least S·2(n-1)/n·B/C.
std::vector<Phase> build_nvls(const BuildInput& input, const CommProfile& profile) {
  const auto ranks = flatten(input.layout);
  const double n = static_cast<double>(ranks.size());
  const double bytes = input.bytes * (1 + 1 / n) / profile.nvls_efficiency;
  const double bus_bytes = input.bytes * 2 * (n - 1) / n;
  const auto carried = [&](LinkId link) {
    if (profile.nvls_max_bus_GBps <= 0) return bytes;
    const double capacity = profile.effective_capacity_Bps(input.topology.link(link).tier,
                                                           input.topology.link(link).capacity_Bps);
    return std::max(bytes, bus_bytes * capacity / (profile.nvls_max_bus_GBps * 1e9));
  };
  Phase phase;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int other = ranks[(i + 1) % ranks.size()];
    const Route out = input.topology.nvlink_route(ranks[i], other);
    const Route in = input.topology.nvlink_route(other, ranks[i]);
    phase.transfers.push_back(Transfer{{out.front()}, carried(out.front())});
    phase.transfers.push_back(Transfer{{in.back()}, carried(in.back())});
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
