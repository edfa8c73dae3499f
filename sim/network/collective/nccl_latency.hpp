// NCCL's latency (alpha) model per algorithm, restated from NCCL v2.30.7-1
// src/graph/tuning.cc (ncclTopoTuneModel; hardware.md §4.3). All constants come from the
// CommProfile; these functions only compose them.
#pragma once

#include "sim/core/time.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim {

// A node here is what NCCL counts as one: an NVLink domain (see GroupLayout).
struct GroupShape {
  int ranks = 0;
  int nodes = 0;
  int max_per_node = 0;  // largest number of the group's ranks on one node
};

// Ring: base + (nsteps - nInter) * intra + nInter * inter, with nsteps = 2(n-1) for
// all-reduce and n-1 for all-gather / reduce-scatter; nInter = 2(nodes-1) or nodes-1.
// Multi-node: intra = max(intra, net overhead (x3 for Simple)); inter uses the tree's NET
// latency when one rank per node. Multi-node Simple all-reduce whose per-channel, per-rank
// chunk is at least 64 bytes pays the ring plateau factor (x1.4).
Time ring_latency(const CommProfile& profile, CollectiveOp op, Protocol protocol,
                  const GroupShape& shape, double bytes);

// Tree all-reduce: base + 2 * ((ppn - 1) * intra + floor(log2(nodes)) * inter).
Time tree_latency(const CommProfile& profile, Protocol protocol, const GroupShape& shape);

// NVLS: base + NVLink term (25 µs on Hopper).
Time nvls_latency(const CommProfile& profile);

// Point-to-point (send/recv, all-to-all): one Simple step over NVLink (within one domain) or
// the network.
Time p2p_latency(const CommProfile& profile, bool crosses_domains);

}  // namespace wallsim
