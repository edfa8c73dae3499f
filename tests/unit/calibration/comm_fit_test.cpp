// Recovery of known comm parameters from synthetic nccl-tests style data made by the analytical
// network model from an altered H100 profile on DGX H100 (test_profiles.hpp), 2% noise.
#include <catch2/catch.hpp>

#include "calibration/fit/comm_fit.hpp"
#include "test_profiles.hpp"

using namespace wallsim;

namespace {

constexpr int kLL = 0, kLL128 = 1, kSimple = 2;

CommFit fit_from(double noise) {
  const auto files = test::synthetic_from(test::altered_h100_document(), noise);
  const CommProfile base = parse_profile(test::h100_document(), "base").comm;
  return fit_comm(fit_collective_series(files[3].collective, base.ring_channels), base,
                  test::dgx_h100());
}

}  // namespace

TEST_CASE("a series fit returns latency and bus bandwidth of exact nccl-tests data") {
  // all-reduce on 8 ranks: t = 20 µs + S·(2·7/8) / 300 GB/s.
  std::vector<CollectivePoint> points;
  for (double bytes : {1e3, 1e6, 1e9}) {
    points.push_back({CollectiveOp::kAllReduce, 8, 1, bytes, Algorithm::kRing, Protocol::kSimple,
                      20e-6 + bytes * 1.75 / 300e9});
  }
  const auto series = fit_collective_series(points, 24);
  REQUIRE(series.size() == 1);
  CHECK(series[0].alpha_us == Approx(20).epsilon(1e-9));
  CHECK(series[0].busbw_GBps == Approx(300).epsilon(1e-9));
  CHECK(series[0].points == 3);
}

TEST_CASE("noiseless data give back the altered comm parameters") {
  const CommFit fit = fit_from(0.0);
  CHECK(fit.profile.nvlink_efficiency == Approx(0.78).epsilon(1e-6));
  CHECK(fit.profile.nvls_efficiency == Approx(0.75).epsilon(1e-6));
  CHECK(fit.profile.network_efficiency == Approx(0.9).epsilon(1e-6));
  CHECK(fit.profile.ring.nvlink_us[kSimple] == Approx(4.0).epsilon(1e-4));
  CHECK(fit.profile.ring.base_us[kSimple] == Approx(8.4).epsilon(1e-4));
  CHECK(fit.profile.ring.net_us[kSimple] == Approx(12.0).epsilon(1e-4));
  CHECK(fit.profile.ring.net_us[kLL] == Approx(3.0).epsilon(1e-4));
  // LL is capped at NCCL's 141 GB/s on one node: the cap is what the data show.
  CHECK(fit.profile.ring_ll_max_bus_GBps[0] == Approx(141.0).epsilon(1e-6));
  CHECK(fit.profile.ring_protocol_efficiency[kLL128] == Approx(0.92).epsilon(1e-6));
}

TEST_CASE("noisy data give the comm parameters within derived tolerances") {
  const CommFit fit = fit_from(0.02);
  // Bandwidths: each series' slope rests on ~5 large sizes (2%/sqrt(5) ~ 0.9%) and the
  // median over 9 (NVLink), 6 (network) or 2 (NVLS) series; 2-3% is over 3 sigma.
  CHECK(fit.profile.nvlink_efficiency == Approx(0.78).epsilon(0.02));
  CHECK(fit.profile.network_efficiency == Approx(0.9).epsilon(0.03));
  CHECK(fit.profile.nvls_efficiency == Approx(0.75).epsilon(0.03));
  // Per-step NVLink latency: a line through 9 alphas (each ~1% of 12-64 µs) over step counts
  // 1..14: ~2% on the slope; 10% allowed.
  CHECK(fit.profile.ring.nvlink_us[kSimple] == Approx(4.0).epsilon(0.10));
  CHECK(fit.profile.ring.nvlink_us[kLL128] == Approx(2.2).epsilon(0.10));
  // Per-step network latency comes from 1-2 inter steps inside alphas of 76-200 µs: 1% of the
  // alpha plus the intra-step error times 14-28 steps is ~1 µs of 12 µs; median of 6 series
  // ~5%; 20% allowed.
  CHECK(fit.profile.ring.net_us[kSimple] == Approx(12.0).epsilon(0.20));
}

TEST_CASE("what the data cannot determine is kept from the base profile") {
  const CommFit fit = fit_from(0.02);
  const CommProfile base = parse_profile(test::h100_document(), "base").comm;
  CHECK(fit.profile.pcie_efficiency == base.pcie_efficiency);
  CHECK(fit.profile.tree.base_us == base.tree.base_us);
  CHECK(fit.profile.tree_protocol_efficiency == base.tree_protocol_efficiency);
  CHECK(fit.profile.tree_ll_max_bus_GBps[0] == base.tree_ll_max_bus_GBps[0]);  // no 1-node tree
  CHECK(std::count(fit.fitted.begin(), fit.fitted.end(), "nvlink_efficiency") == 1);
}

namespace {

// Exact points t = alpha + S·busfactor/busbw of one series at three sizes.
std::vector<CollectivePoint> exact_series(Algorithm algorithm, int ranks, int nodes, double alpha_s,
                                          double busbw_Bps) {
  std::vector<CollectivePoint> points;
  const double factor = 2.0 * (ranks - 1) / ranks;  // all-reduce
  for (double bytes : {1e6, 1e8, 1e9}) {
    points.push_back({CollectiveOp::kAllReduce, ranks, nodes, bytes, algorithm, Protocol::kSimple,
                      alpha_s + bytes * factor / busbw_Bps});
  }
  return points;
}

}  // namespace

TEST_CASE("single-node tree and multi-node NVLS series leave the comm profile as it was") {
  // nccl_bench measures tree only across nodes and NVLS only within one, but a raw file may
  // come from elsewhere: a one-node tree has no network step (the per-step solve would divide
  // by log2(1) = 0) and NVLS across nodes is NVLS+tree, not the in-switch model.
  std::vector<CollectivePoint> points = exact_series(Algorithm::kTree, 8, 1, 30e-6, 200e9);
  const auto nvls = exact_series(Algorithm::kNvls, 16, 2, 40e-6, 400e9);
  points.insert(points.end(), nvls.begin(), nvls.end());
  const CommProfile base = parse_profile(test::h100_document(), "base").comm;
  const CommFit fit =
      fit_comm(fit_collective_series(points, base.ring_channels), base, test::dgx_h100());
  CHECK(fit.profile.tree.net_us == base.tree.net_us);
  CHECK(fit.profile.tree_simple_max_bus_GBps == base.tree_simple_max_bus_GBps);
  CHECK(fit.profile.nvls_efficiency == base.nvls_efficiency);
  CHECK(fit.fitted.empty());
}
