#include "calibration/fit/comm_fit.hpp"

#include <algorithm>
#include <bit>
#include <functional>
#include <map>
#include <set>
#include <tuple>

#include "calibration/fit/fit_math.hpp"

namespace wallsim {
namespace {

constexpr int kSimple = static_cast<int>(Protocol::kSimple);
constexpr int kLL = static_cast<int>(Protocol::kLL);
constexpr int kLL128 = static_cast<int>(Protocol::kLL128);

using SeriesKey = std::tuple<int, int, int, int, int>;  // op, algorithm, protocol, ranks, nodes

bool below_plateau(const CollectivePoint& p, int ring_channels) {
  return p.op == CollectiveOp::kAllReduce && p.algorithm == Algorithm::kRing &&
         p.protocol == Protocol::kSimple && p.nodes > 1 && p.bytes / (ring_channels * p.ranks) < 64;
}

std::vector<const CollectiveSeries*> select(
    const std::vector<CollectiveSeries>& all,
    const std::function<bool(const CollectiveSeries&)>& keep) {
  std::vector<const CollectiveSeries*> out;
  for (const auto& s : all) {
    if (keep(s)) out.push_back(&s);
  }
  return out;
}

bool is_ring_intra(const CollectiveSeries& s, int protocol) {
  return s.algorithm == Algorithm::kRing && s.nodes == 1 &&
         static_cast<int>(s.protocol) == protocol;
}

int ring_steps(CollectiveOp op, int ranks) {
  return op == CollectiveOp::kAllReduce ? 2 * (ranks - 1) : ranks - 1;
}

double median_busbw(const std::vector<const CollectiveSeries*>& series) {
  std::vector<double> values;
  for (const auto* s : series) values.push_back(s->busbw_GBps);
  return median(values);
}

// alpha = base + steps · per_step over single-node rings of one protocol. With one distinct step
// count the base is kept and the per-step latency solved for.
void fit_ring_intra_latency(const std::vector<const CollectiveSeries*>& series, int p,
                            CommFit& fit) {
  std::vector<double> steps, alphas;
  for (const auto* s : series) {
    steps.push_back(ring_steps(s->op, s->ranks));
    alphas.push_back(std::max(s->alpha_us, 1e-3));
  }
  auto& ring = fit.profile.ring;
  if (std::set<double>(steps.begin(), steps.end()).size() >= 2) {
    const LineFit line = fit_line_relative(steps, alphas);
    ring.base_us[p] = std::max(0.0, line.intercept);
    ring.nvlink_us[p] = std::max(0.0, line.slope);
  } else {
    ring.nvlink_us[p] = std::max(0.0, (median(alphas) - ring.base_us[p]) / steps.front());
  }
  fit.fitted.push_back(std::string("latency_us.ring.{base,nvlink}[") + protocol_name(Protocol(p)) +
                       "]");
}

void fit_ring_intra(const std::vector<CollectiveSeries>& all, double nvlink_GBps, CommFit& fit) {
  CommProfile& c = fit.profile;
  const auto simple = select(all, [](const auto& s) { return is_ring_intra(s, kSimple); });
  if (!simple.empty()) {
    c.nvlink_efficiency = std::clamp(
        median_busbw(simple) / (nvlink_GBps * c.ring_protocol_efficiency[kSimple]), 0.01, 1.0);
    fit.fitted.push_back("nvlink_efficiency");
  }
  const double line_GBps = nvlink_GBps * c.nvlink_efficiency;
  const auto ll128 = select(all, [](const auto& s) { return is_ring_intra(s, kLL128); });
  if (!ll128.empty() && !simple.empty()) {
    c.ring_protocol_efficiency[kLL128] = std::clamp(median_busbw(ll128) / line_GBps, 0.01, 1.0);
    fit.fitted.push_back("protocol_efficiency.ring.ll128");
  }
  const auto ll = select(all, [](const auto& s) { return is_ring_intra(s, kLL); });
  if (!ll.empty()) {
    // NCCL caps LL below what its 50% payload would allow on NVLink (llMaxBw): the measured
    // rate becomes the cap, and the payload efficiency rises only if the data beat it.
    const double measured = median_busbw(ll);
    c.ring_ll_max_bus_GBps[0] = measured;
    if (measured > c.ring_protocol_efficiency[kLL] * line_GBps) {
      c.ring_protocol_efficiency[kLL] = std::clamp(measured / line_GBps, 0.01, 1.0);
    }
    fit.fitted.push_back("max_bus_GBps.ring_ll[0]");
  }
  for (int p = 0; p < kProtocolCount; ++p) {
    const auto series = select(all, [p](const auto& s) { return is_ring_intra(s, p); });
    if (!series.empty()) fit_ring_intra_latency(series, p, fit);
  }
}

void fit_nvls(const std::vector<CollectiveSeries>& all, double nvlink_GBps, CommFit& fit) {
  // NVLS within one NVSwitch domain only: across nodes NCCL pairs it with a network tree,
  // which this in-switch model does not describe.
  const auto nvls =
      select(all, [](const auto& s) { return s.algorithm == Algorithm::kNvls && s.nodes == 1; });
  if (nvls.empty()) return;
  CommProfile& c = fit.profile;
  std::vector<double> efficiency, latency;
  for (const auto* s : nvls) {
    // busbw = 2(n-1)/(n+1) · e · line · nvlink_efficiency (each link carries S(1+1/n)).
    const double n = s->ranks;
    efficiency.push_back(s->busbw_GBps * (n + 1) /
                         (2 * (n - 1) * nvlink_GBps * c.nvlink_efficiency));
    latency.push_back(s->alpha_us - c.nvls.base_us[kSimple]);
  }
  c.nvls_efficiency = std::clamp(median(efficiency), 0.01, 1.0);
  c.nvls.nvlink_us[kSimple] = std::max(0.0, median(latency));
  fit.fitted.push_back("nvls_efficiency");
  fit.fitted.push_back("latency_us.nvls.nvlink[simple]");
}

void fit_p2p(const std::vector<CollectiveSeries>& all, CommFit& fit) {
  CommProfile& c = fit.profile;
  for (bool inter : {false, true}) {
    const auto p2p = select(all, [inter](const auto& s) {
      return s.op == CollectiveOp::kSendRecv && (s.nodes > 1) == inter;
    });
    if (p2p.empty()) continue;
    std::vector<double> hop;
    for (const auto* s : p2p) hop.push_back(s->alpha_us - c.p2p.base_us[kSimple]);
    (inter ? c.p2p.net_us : c.p2p.nvlink_us)[kSimple] = std::max(0.0, median(hop));
    fit.fitted.push_back(inter ? "latency_us.p2p.net[simple]" : "latency_us.p2p.nvlink[simple]");
  }
}

// Inter-node step latency of a multi-node ring series, given the intra-node constants
// (nccl_latency.hpp: base + (steps − inter)·max(intra, overhead) + inter·net, ×plateau).
double ring_net_step_us(const CollectiveSeries& s, const CommProfile& c) {
  const int p = static_cast<int>(s.protocol);
  const bool all_reduce = s.op == CollectiveOp::kAllReduce;
  const int steps = ring_steps(s.op, s.ranks);
  const int inter = (all_reduce ? 2 : 1) * (s.nodes - 1);
  const double intra = std::max(c.ring.nvlink_us[p], c.net_overhead_us * (p == kSimple ? 3 : 1));
  const double plateau = all_reduce && p == kSimple ? c.ring_plateau_factor : 1.0;
  return (s.alpha_us / plateau - c.ring.base_us[p] - (steps - inter) * intra) / inter;
}

void fit_ring_inter(const std::vector<CollectiveSeries>& all, const ClusterSpec& cluster,
                    CommFit& fit) {
  CommProfile& c = fit.profile;
  const auto multi = [](const CollectiveSeries& s) {
    return s.algorithm == Algorithm::kRing && s.nodes > 1 && s.per_node() > 1 &&
           s.ranks % s.nodes == 0;
  };
  const auto simple =
      select(all, [&](const auto& s) { return multi(s) && s.protocol == Protocol::kSimple; });
  if (!simple.empty()) {
    // Each GPU sends 1/ppn of its ring traffic over its own NIC (plan_builders.cpp), so the
    // bus bandwidth is ppn NICs' worth.
    std::vector<double> per_nic;
    for (const auto* s : simple) per_nic.push_back(s->busbw_GBps / s->per_node());
    c.network_efficiency =
        std::clamp(median(per_nic) / (cluster.nic.bandwidth_Gbps / 8), 0.01, 1.0);
    fit.fitted.push_back("network_efficiency");
  }
  for (int p = 0; p < kProtocolCount; ++p) {
    const auto series =
        select(all, [&](const auto& s) { return multi(s) && static_cast<int>(s.protocol) == p; });
    if (series.empty()) continue;
    std::vector<double> net;
    for (const auto* s : series) net.push_back(ring_net_step_us(*s, c));
    c.ring.net_us[p] = std::max(0.0, median(net));
    fit.fitted.push_back(std::string("latency_us.ring.net[") + protocol_name(Protocol(p)) + "]");
    if (p == kLL) {
      for (const auto* s : series)
        c.ring_ll_max_bus_GBps[node_count_index(s->nodes)] = s->busbw_GBps;
    }
  }
}

PerNodeCount& tree_cap(CommProfile& c, int p) {
  return p == kLL ? c.tree_ll_max_bus_GBps
                  : (p == kLL128 ? c.tree_ll128_max_bus_GBps : c.tree_simple_max_bus_GBps);
}

void fit_tree(const std::vector<CollectiveSeries>& all, CommFit& fit) {
  CommProfile& c = fit.profile;
  for (int p = 0; p < kProtocolCount; ++p) {
    const auto series = select(all, [p](const auto& s) {
      // One node has no network step to solve for (log2 nodes = 0 below).
      return s.algorithm == Algorithm::kTree && static_cast<int>(s.protocol) == p && s.nodes > 1 &&
             s.ranks % s.nodes == 0;
    });
    if (series.empty()) continue;
    std::vector<double> net;
    for (const auto* s : series) {
      tree_cap(c, p)[node_count_index(s->nodes)] = s->busbw_GBps;
      const int log2_nodes = std::bit_width(static_cast<unsigned>(s->nodes)) - 1;
      const double intra = 2.0 * (s->per_node() - 1) * c.tree.nvlink_us[p];
      net.push_back((s->alpha_us - c.tree.base_us[p] - intra) / (2.0 * log2_nodes));
    }
    c.tree.net_us[p] = std::max(0.0, median(net));
    fit.fitted.push_back(std::string("latency_us.tree.net[") + protocol_name(Protocol(p)) +
                         "], max_bus_GBps.tree_" + protocol_name(Protocol(p)));
  }
}

}  // namespace

std::vector<CollectiveSeries> fit_collective_series(const std::vector<CollectivePoint>& points,
                                                    int ring_channels) {
  std::map<SeriesKey, std::pair<std::vector<double>, std::vector<double>>> groups;
  for (const CollectivePoint& p : points) {
    if (below_plateau(p, ring_channels)) continue;
    auto& [x, y] = groups[{static_cast<int>(p.op), static_cast<int>(p.algorithm),
                           static_cast<int>(p.protocol), p.ranks, p.nodes}];
    x.push_back(p.bytes * bus_bandwidth_factor(p.op, p.ranks));
    y.push_back(p.time_s);
  }
  std::vector<CollectiveSeries> out;
  for (const auto& [key, xy] : groups) {
    if (std::set<double>(xy.first.begin(), xy.first.end()).size() < 2) continue;
    const LineFit line = fit_line_relative(xy.first, xy.second);
    const auto [op, algorithm, protocol, ranks, nodes] = key;
    out.push_back({static_cast<CollectiveOp>(op), static_cast<Algorithm>(algorithm),
                   static_cast<Protocol>(protocol), ranks, nodes, line.intercept * 1e6,
                   1.0 / line.slope / 1e9, static_cast<int>(xy.first.size())});
  }
  return out;
}

CommFit fit_comm(const std::vector<CollectiveSeries>& series, const CommProfile& base,
                 const ClusterSpec& cluster) {
  CommFit fit{base, {}};
  fit_ring_intra(series, cluster.nvlink.bandwidth_GBps, fit);
  fit_nvls(series, cluster.nvlink.bandwidth_GBps, fit);
  fit_p2p(series, fit);
  fit_ring_inter(series, cluster, fit);
  fit_tree(series, fit);
  return fit;
}

}  // namespace wallsim
