#include "calibration/fit/kernel_fit.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "calibration/fit/fit_math.hpp"
#include "sim/hw/wave_quantization.hpp"

namespace wallsim {
namespace {

constexpr double kTera = 1e12;

std::vector<CurvePoint> hbm_efficiency_samples(const std::vector<MemoryPoint>& points,
                                               double launch_us, double hbm_peak_Bps) {
  std::vector<CurvePoint> samples;
  for (const MemoryPoint& p : points) {
    const double run_s = run_time_s(p.time_s, launch_us);
    // Below this the launch gap hides the transfer: 2% noise on the gap would swamp it.
    if (p.bytes <= 0 || run_s < kMinTransferShare * p.time_s) continue;
    samples.push_back({p.bytes, p.bytes / (run_s * hbm_peak_Bps)});
  }
  return samples;
}

// Achieved fraction of the dtype's peak with the wave quantization of the profile's tile
// divided out: what best_fraction · size_falloff should equal for this shape.
double normalized_fraction(const GemmPoint& p, const GpuProfile& profile) {
  const std::int64_t tiles = gemm_tile_count(p.shape.m, p.shape.n, p.shape.batch,
                                             profile.gemm.tile_m, profile.gemm.tile_n);
  const double run_s = run_time_s(p.time_s, profile.kernel_launch_overhead.us());
  const double achieved = gemm_flops(p.shape) / run_s;
  return achieved / (profile.peak_flops(p.dtype) * wave_efficiency(tiles, profile.sms));
}

bool compute_bound(const GemmPoint& p, const GpuProfile& profile) {
  const double bytes = gemm_bytes(p.shape, p.dtype);
  const double memory_s = bytes / (profile.hbm_bandwidth_Bps * profile.hbm_efficiency.at(bytes));
  return memory_s < 0.5 * run_time_s(p.time_s, profile.kernel_launch_overhead.us());
}

double best_fraction(const std::vector<CurvePoint>& samples) {
  std::vector<double> large;
  for (const CurvePoint& s : samples) {
    if (s.x >= kLargeGemmFlops) large.push_back(s.y);
  }
  if (large.empty()) {
    for (const CurvePoint& s : samples) large.push_back(s.y);
  }
  return std::min(1.0, quantile(large, kBestQuantile));
}

// Dense points (batch 1) key the dense table by (m, n, k); grouped points (batch > 1, `batch`
// equal problems) key the grouped table by their mean problem, which is each problem's (m, n, k)
// (grouped_gemm.hpp's mean_grouped_problem).
std::vector<MeasuredGemm> measured_table(const std::vector<GemmPoint>& points, Dtype dtype,
                                         bool grouped, const GpuProfile& profile) {
  using Shape = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  std::map<Shape, std::vector<double>> rates;
  for (const GemmPoint& p : points) {
    if (p.dtype != dtype || (p.shape.batch > 1) != grouped || !compute_bound(p, profile)) continue;
    const double run_s = run_time_s(p.time_s, profile.kernel_launch_overhead.us());
    rates[{p.shape.m, p.shape.n, p.shape.k}].push_back(gemm_flops(p.shape) / run_s);
  }
  std::vector<MeasuredGemm> table;
  for (const auto& [shape, samples] : rates) {
    const auto [m, n, k] = shape;
    table.push_back(
        {static_cast<double>(m), static_cast<double>(n), static_cast<double>(k), median(samples)});
  }
  return table;
}

}  // namespace

double run_time_s(double time_s, double launch_overhead_us) {
  return std::max(time_s - launch_overhead_us * 1e-6, 0.01 * time_s);
}

std::optional<MemoryFit> fit_memory(const std::vector<MemoryPoint>& points, double hbm_peak_Bps) {
  std::vector<double> bytes, times;
  for (const MemoryPoint& p : points) {
    if (p.bytes == 0 || p.bytes >= kLinearRegimeBytes) {
      bytes.push_back(p.bytes);
      times.push_back(p.time_s);
    }
  }
  const bool has_empty = std::count(bytes.begin(), bytes.end(), 0.0) > 0;
  const bool has_large = std::any_of(bytes.begin(), bytes.end(), [](double b) { return b > 0; });
  if (!has_empty || !has_large) return std::nullopt;
  const LineFit line = fit_line_relative(bytes, times);
  MemoryFit fit;
  fit.launch_overhead_us = std::max(0.0, line.intercept * 1e6);
  fit.streaming_Bps = 1.0 / line.slope;
  fit.hbm_efficiency = capped_by_larger(
      median_by_log2_bin(hbm_efficiency_samples(points, fit.launch_overhead_us, hbm_peak_Bps)));
  return fit;
}

std::optional<GemmFit> fit_gemm(const std::vector<GemmPoint>& points, const GpuProfile& profile) {
  std::map<Dtype, std::vector<CurvePoint>> by_dtype;
  GemmFit fit;
  for (const GemmPoint& p : points) {
    if (!compute_bound(p, profile)) continue;
    by_dtype[p.dtype].push_back({gemm_flops(p.shape), normalized_fraction(p, profile)});
    ++fit.compute_bound_points;
  }
  if (by_dtype.empty()) return std::nullopt;
  std::vector<CurvePoint> relative;
  for (const auto& [dtype, samples] : by_dtype) {
    const double best = best_fraction(samples);
    fit.best_tflops[dtype] = best * profile.peak_flops(dtype) / kTera;
    for (const CurvePoint& s : samples) relative.push_back({s.x, s.y / best});
  }
  fit.size_falloff = monotone_efficiency(median_by_log2_bin(relative));
  for (const auto& [dtype, samples] : by_dtype) {
    fit.measured[dtype] = measured_table(points, dtype, false, profile);
    std::vector<MeasuredGemm> grouped = measured_table(points, dtype, true, profile);
    if (!grouped.empty()) fit.grouped_measured[dtype] = std::move(grouped);
  }
  return fit;
}

std::vector<AttentionTable> fit_attention(const std::vector<AttentionPoint>& points,
                                          double launch_overhead_us) {
  using Key = std::tuple<int, bool, std::int64_t>;  // pass, causal, head_dim
  std::map<Key, std::map<std::int64_t, std::vector<double>>> samples;
  for (const AttentionPoint& p : points) {
    const double flops = p.pass == AttentionPass::kForward ? attention_forward_flops(p.shape)
                                                           : attention_backward_flops(p.shape);
    const Key key{static_cast<int>(p.pass), p.shape.causal, p.shape.head_dim};
    samples[key][p.shape.seq_kv].push_back(flops / run_time_s(p.time_s, launch_overhead_us));
  }
  std::vector<AttentionTable> tables;
  for (const auto& [key, by_seq] : samples) {
    std::vector<CurvePoint> curve;
    for (const auto& [seq, rates] : by_seq)
      curve.push_back({static_cast<double>(seq), median(rates)});
    tables.push_back(AttentionTable{static_cast<AttentionPass>(std::get<0>(key)), std::get<1>(key),
                                    static_cast<double>(std::get<2>(key)), LogCurve(curve)});
  }
  return tables;
}

}  // namespace wallsim
