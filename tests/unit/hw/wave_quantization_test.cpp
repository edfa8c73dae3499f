#include "sim/hw/wave_quantization.hpp"

#include <catch2/catch.hpp>

using namespace wallsim;

TEST_CASE("tiles count every partial tile of the output", "[hw][wave]") {
  // 129 rows need two 128-row tiles; 256 columns one 256-column tile; 3 GEMMs in the group.
  CHECK(gemm_tile_count(129, 256, 3, 128, 256) == 2 * 1 * 3);
  CHECK(gemm_tile_count(0, 256, 1, 128, 256) == 0);
}

TEST_CASE("one tile more than the SMs costs a second, nearly empty wave", "[hw][wave]") {
  // 133 tiles on 132 SMs: two waves of 132 slots, 133 used.
  CHECK(wave_efficiency(133, 132) == Approx(133.0 / 264.0));
  CHECK(wave_efficiency(132, 132) == Approx(1.0));
  CHECK(wave_efficiency(264, 132) == Approx(1.0));
  // Fewer tiles than SMs leave the rest idle.
  CHECK(wave_efficiency(33, 132) == Approx(0.25));
  CHECK(wave_efficiency(0, 132) == Approx(1.0));
}
