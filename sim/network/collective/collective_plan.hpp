// A collective decomposed the way NCCL runs it: an algorithm, a protocol, a latency (alpha)
// and phases of concurrent point-to-point transfers over resolved routes (beta).
//
// A network model executes a plan: phases run one after another, the transfers of a phase
// concurrently; the collective ends `latency` plus the transfer time after it starts, and no
// earlier than `latency + min_transfer_time` (the protocol's bandwidth cap). Bytes are wire
// bytes: payload divided by the protocol's payload efficiency.
#pragma once

#include <span>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/network/collective/collective.hpp"
#include "sim/network/topology/topology.hpp"

namespace wallsim {

struct Transfer {
  Route route;
  double bytes = 0;
};

struct Phase {
  std::vector<Transfer> transfers;
};

struct CollectivePlan {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  int ranks = 0;
  int domains = 0;   // NVLink domains the ranks span
  double bytes = 0;  // S as requested
  Time latency;
  Time min_transfer_time;
  std::vector<Phase> phases;
};

// How a group of ranks sits on the NVLink domains: ranks grouped by domain (domains in
// ascending order, ranks within a domain ascending). `per_domain` is the common count, 0 when
// domains differ. NCCL's algorithms treat a multi-node NVLink domain as one node (MNNVL): its
// ranks meet over NVLink, and only traffic between domains takes the NICs; so the "nodes" of
// the algorithms and of NCCL's latency model are domains here.
struct GroupLayout {
  std::vector<std::vector<int>> by_domain;
  int ranks = 0;
  int per_domain = 0;
  int domains() const { return static_cast<int>(by_domain.size()); }
};

// Throws InputError when a rank is outside the topology, repeated, or fewer than 2 ranks.
GroupLayout layout_group(const Topology& topology, const std::vector<int>& ranks);

// Time of a plan when it runs alone (no other traffic): latency plus, per phase, the most
// loaded link's bytes over its capacity; at least latency + min_transfer_time.
Time contention_free_time(const CollectivePlan& plan, const std::vector<double>& capacity_Bps);

// Whether two plans move the same traffic pattern: same algorithm, protocol, latency, phase
// count, transfers per phase and bytes per transfer (routes may differ). Instances of one
// collective on translated groups have the same shape.
bool same_shape(const CollectivePlan& a, const CollectivePlan& b);

// Concurrent instances of one collective (same shape; the first is the one kept) as one plan
// whose transfer k of phase p crosses the links of every instance's transfer k of phase p, a
// link as many times as instances cross it. Run as flows, each merged transfer stands for all
// its instances moving at one rate: exact when the instances are symmetric (every instance
// sees the same contention), which is what symmetric simulation assumes. Throws
// std::invalid_argument when the shapes differ or `instances` is empty.
CollectivePlan merge_instances(std::span<const CollectivePlan> instances);

}  // namespace wallsim
