// Tile and wave quantization of a GEMM over the SMs.
//
// A GEMM kernel splits its m×n output into tiles; each thread block computes one tile and an
// SM runs one block at a time (Hopper's large-tile kernels occupy a whole SM). Tiles run in
// "waves" of one tile per SM, so the last, partial wave leaves SMs idle:
//   efficiency = tiles / (ceil(tiles / sms) · sms)
// e.g. 133 tiles on 132 SMs take two full waves' time at 133/264 ≈ 50% efficiency.
// (NVIDIA, "Matrix Multiplication Background User's Guide", sections on tile and wave
// quantization:
// https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/)
#pragma once

#include <cstdint>
#include <stdexcept>

namespace wallsim {

// Number of output tiles of `batch` independent m×n GEMMs with tile_m×tile_n tiles.
constexpr std::int64_t gemm_tile_count(std::int64_t m, std::int64_t n, std::int64_t batch,
                                       std::int64_t tile_m, std::int64_t tile_n) {
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  return ceil_div(m, tile_m) * ceil_div(n, tile_n) * batch;
}

// Fraction of SM-time doing useful tiles when `tiles` run in waves over `sms` SMs; 1 for no
// tiles (an empty GEMM wastes nothing).
constexpr double wave_efficiency(std::int64_t tiles, int sms) {
  if (sms <= 0) throw std::invalid_argument("wave_efficiency needs sms > 0");
  if (tiles <= 0) return 1.0;
  const std::int64_t waves = (tiles + sms - 1) / sms;
  return static_cast<double>(tiles) / static_cast<double>(waves * sms);
}

// The least time `tiles` output tiles of a GEMM with inner dimension k can take on sms_available
// of a GPU's `sms` SMs: ceil(tiles / sms_available) waves, each one tile_m×tile_n×k tile per SM
// at the per-SM share of the best-shape rate:
//   t = ceil(tiles / sms_available) · 2·k·tile_m·tile_n / (best_flops / sms)
// Tiles are charged whole (a ragged edge costs a full tile) so the floor never falls as a
// dimension grows. best_flops is taken as a whole-wave rate, as GpuModel's falloff path does.
constexpr double wave_floor_s(std::int64_t tiles, std::int64_t k, std::int64_t tile_m,
                              std::int64_t tile_n, int sms_available, int sms, double best_flops) {
  if (sms_available <= 0 || sms <= 0) throw std::invalid_argument("wave_floor_s needs sms > 0");
  if (tiles <= 0 || k <= 0) return 0.0;
  const std::int64_t waves = (tiles + sms_available - 1) / sms_available;
  const double tile_flops =
      2.0 * static_cast<double>(k) * static_cast<double>(tile_m) * static_cast<double>(tile_n);
  return static_cast<double>(waves) * tile_flops / (best_flops / sms);
}

}  // namespace wallsim
