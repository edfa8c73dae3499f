// Fitting the `gpu` section of a profile from kernel microbenchmarks (pure functions).
//
// Order matters: the memory fit gives the launch overhead and HBM efficiency that the GEMM
// and attention fits subtract (a GEMM's time minus the launch gap is its run time; a GEMM whose
// bytes over the fitted HBM rate take most of its time is memory-bound and says nothing about
// tensor-core efficiency). calibration/README.md states each estimator.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "calibration/raw/raw_data.hpp"
#include "sim/hw/gpu_profile.hpp"

namespace wallsim {

struct MemoryFit {
  double launch_overhead_us = 0;           // intercept of time = launch + bytes / bandwidth
  double streaming_Bps = 0;                // 1 / slope: the large-transfer bandwidth
  std::vector<CurvePoint> hbm_efficiency;  // fraction of the peak by bytes, non-decreasing
};

// Least squares (relative error) of time = launch + bytes / bandwidth over the empty kernels
// and the transfers of at least kLinearRegimeBytes, where the efficiency curve is flat; then,
// per power-of-two bin of bytes, the median of bytes / ((time − launch) · hbm_peak_Bps) over
// the transfers that take at least kMinTransferShare of their time (below that the launch gap
// and its noise hide the transfer; the curve reads flat there), made non-decreasing and capped
// at 1. nullopt without an empty kernel and a large transfer for the line.
inline constexpr double kLinearRegimeBytes = 1e8;
inline constexpr double kMinTransferShare = 0.25;
std::optional<MemoryFit> fit_memory(const std::vector<MemoryPoint>& points, double hbm_peak_Bps);

struct GemmFit {
  std::map<Dtype, double> best_tflops;   // per dtype measured
  std::vector<CurvePoint> size_falloff;  // relative to best, by FLOPs, non-decreasing, <= 1
  // Per dtype, the gpu.gemm.measured table: for each dense (batch 1) shape (m, n, k) measured,
  // the median achieved FLOP/s after the launch gap over the compute-bound points of that shape.
  std::map<Dtype, std::vector<MeasuredGemm>> measured;
  // Per dtype with grouped points (batch > 1: `batch` equal problems), the
  // gpu.gemm.grouped_measured table, keyed by one problem's (m, n, k), the same way.
  std::map<Dtype, std::vector<MeasuredGemm>> grouped_measured;
  int compute_bound_points = 0;
};

// For each compute-bound point (its bytes over `profile`'s HBM model take less than half of
// its run time), the achieved fraction of peak with the wave quantization of `profile`'s tile
// divided out. Best per dtype = the kBestQuantile quantile of that fraction over GEMMs of at
// least kLargeGemmFlops (all of the dtype's points when none is that large); the falloff =
// per power-of-two bin of FLOPs, the median fraction over best, made non-decreasing, capped at 1.
inline constexpr double kLargeGemmFlops = 1e11;
inline constexpr double kBestQuantile = 0.8;
std::optional<GemmFit> fit_gemm(const std::vector<GemmPoint>& points, const GpuProfile& profile);

// Achieved FLOP/s (FlashAttention's FLOP convention, kernel_flops.hpp) of each point after the
// launch gap; one table per (pass, causal, head_dim) measured, median per seq_kv.
std::vector<AttentionTable> fit_attention(const std::vector<AttentionPoint>& points,
                                          double launch_overhead_us);

// Run time of a kernel measured at `time_s` after the profile's launch gap, floored at 1% of
// the measurement so a noisy tiny kernel cannot give a negative or infinite rate.
double run_time_s(double time_s, double launch_overhead_us);

}  // namespace wallsim
