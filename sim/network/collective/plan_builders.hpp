// Builders that turn a collective into transfers over the topology, one per algorithm.
//
// Each takes the payload efficiency of the protocol (payload bytes per wire byte) and returns
// the phases; latency and caps are added by the planner. The traffic each builder generates is
// what the algorithm really moves per rank (derivations in the .cpp), so link loads, and with
// them algbw and busbw, follow from the topology.
#pragma once

#include <vector>

#include "sim/network/collective/collective_plan.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim {

struct BuildInput {
  const Topology& topology;
  const GroupLayout& layout;
  CollectiveOp op;
  double bytes;               // S
  double payload_efficiency;  // protocol payload per wire byte
};

// Ring (all-reduce = reduce-scatter + all-gather, pipelined; all-gather; reduce-scatter).
std::vector<Phase> build_ring(const BuildInput& input);
// Tree all-reduce: a chain inside each NVLink domain and a double binary tree across domains.
std::vector<Phase> build_tree(const BuildInput& input);
// NVLink SHARP all-reduce inside one NVSwitch domain; `nvls_efficiency`, `nvls_max_bus_GBps`
// and the NVLink efficiency from the profile.
std::vector<Phase> build_nvls(const BuildInput& input, const CommProfile& profile);
// All-to-all as concurrent pairwise send/recv of S/n to every peer.
std::vector<Phase> build_pairwise(const BuildInput& input);
// Send/recv: rank i sends S to rank i+1 (cyclically), as nccl-tests' sendrecv does.
std::vector<Phase> build_p2p(const BuildInput& input);

// Parent of position `k` in tree `tree` (0 or 1) of the double binary tree over `n` domains
// (NCCL's nodes); -1 for the root. Tree 0 is a heap-ordered binary tree (parent (k-1)/2);
// tree 1 is its mirror image (position n-1-k), so every interior node of one tree is a leaf of
// the other.
int double_binary_tree_parent(int k, int n, int tree);

}  // namespace wallsim
