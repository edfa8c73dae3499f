#include "sim/network/collective/nccl_latency.hpp"

#include <algorithm>
#include <bit>

namespace wallsim {
namespace {

int protocol_index(Protocol protocol) {
  return static_cast<int>(protocol);
}

}  // namespace

Time ring_latency(const CommProfile& profile, CollectiveOp op, Protocol protocol,
                  const GroupShape& shape, double bytes) {
  const int p = protocol_index(protocol);
  const bool all_reduce = op == CollectiveOp::kAllReduce;
  const int steps = all_reduce ? 2 * (shape.ranks - 1) : shape.ranks - 1;
  const int inter_steps = shape.nodes <= 1 ? 0 : (all_reduce ? 2 : 1) * (shape.nodes - 1);
  double intra_us = profile.ring.nvlink_us[p];
  double inter_us = shape.max_per_node == 1 ? profile.tree.net_us[p] : profile.ring.net_us[p];
  if (shape.nodes > 1) {
    const double overhead = profile.net_overhead_us * (protocol == Protocol::kSimple ? 3 : 1);
    intra_us = std::max(intra_us, overhead);
  }
  double latency_us =
      profile.ring.base_us[p] + (steps - inter_steps) * intra_us + inter_steps * inter_us;
  const bool plateau = all_reduce && protocol == Protocol::kSimple && shape.nodes > 1 &&
                       bytes / (profile.ring_channels * shape.ranks) >= 64;
  if (plateau) latency_us *= profile.ring_plateau_factor;
  return Time::from_us(latency_us);
}

Time tree_latency(const CommProfile& profile, Protocol protocol, const GroupShape& shape) {
  const int p = protocol_index(protocol);
  const int log2_nodes = std::bit_width(static_cast<unsigned>(std::max(1, shape.nodes))) - 1;
  const double latency_us =
      profile.tree.base_us[p] + 2 * ((shape.max_per_node - 1) * profile.tree.nvlink_us[p] +
                                     log2_nodes * profile.tree.net_us[p]);
  return Time::from_us(latency_us);
}

Time nvls_latency(const CommProfile& profile) {
  const int p = protocol_index(Protocol::kSimple);
  return Time::from_us(profile.nvls.base_us[p] + profile.nvls.nvlink_us[p]);
}

Time p2p_latency(const CommProfile& profile, bool crosses_domains) {
  const int p = protocol_index(Protocol::kSimple);
  const double hop_us = crosses_domains ? profile.p2p.net_us[p] : profile.p2p.nvlink_us[p];
  return Time::from_us(profile.p2p.base_us[p] + hop_us);
}

}  // namespace wallsim
