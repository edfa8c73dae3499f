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

}  // namespace wallsim
