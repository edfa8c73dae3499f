// Choosing how a collective runs, as NCCL's tuner does: every (algorithm, protocol) that NCCL
// would allow for this op and group is planned, and the one with the least predicted time
// (alone on the network) wins. NCCL_ALGO / NCCL_PROTO-style overrides restrict the choice.
#pragma once

#include <vector>

#include "sim/network/collective/collective_plan.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim {

struct PlanChoice {
  Algorithm algorithm;
  Protocol protocol;
};

// The (algorithm, protocol) pairs NCCL allows: all-reduce ring x {LL, LL128, Simple}, tree x
// {LL, LL128, Simple} across NVLink domains, NVLS x Simple inside one domain with NVLS;
// all-gather and reduce-scatter ring x all protocols; all-to-all pairwise; send/recv p2p
// (Simple).
std::vector<PlanChoice> allowed_choices(const Topology& topology, CollectiveOp op,
                                        const GroupLayout& layout);

// Plans one (algorithm, protocol); the pair must be allowed.
CollectivePlan build_plan(const Topology& topology, const CommProfile& profile,
                          const CollectiveRequest& request, const GroupLayout& layout,
                          PlanChoice choice);

// Plans the request with the best allowed choice. Throws InputError when the request forces an
// algorithm or protocol that is not allowed here (the message lists what is).
CollectivePlan plan_collective(const Topology& topology, const CommProfile& profile,
                               const std::vector<double>& capacity_Bps,
                               const CollectiveRequest& request);

// A one-way point-to-point transfer of `bytes` from GPU `src` to GPU `dst` (a pipeline send):
// one Simple step of latency, one transfer over the default route.
CollectivePlan plan_transfer(const Topology& topology, const CommProfile& profile, int src, int dst,
                             double bytes);

}  // namespace wallsim
