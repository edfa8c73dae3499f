#include "models/pipeline_schedule.hpp"

#include <catch2/catch.hpp>

using namespace wallsim::models;

TEST_CASE("1F1B: stage s holds min(pp - s, m) micro-batches at its peak", "[models][schedule]") {
  for (std::int64_t stage = 0; stage < 4; ++stage) {
    CHECK(peak_in_flight_chunks(stage_schedule(4, 1, 16, stage)) == 4 - stage);
  }
  CHECK(peak_in_flight_chunks(stage_schedule(8, 1, 3, 0)) == 3);  // m < pp
}

TEST_CASE("every forward is matched by one backward", "[models][schedule]") {
  const auto steps = stage_schedule(4, 2, 8, 1);
  CHECK(steps.size() == 2u * 8 * 2);
  std::int64_t forwards = 0;
  for (const auto& step : steps) forwards += step.forward ? 1 : 0;
  CHECK(forwards == 16);
}

TEST_CASE("interleaved: stage 0 holds vpp·pp + pp - 1 chunks, Megatron's 1 + (p-1)/(pv) factor",
          "[models][schedule]") {
  // Warm-up 2(p - 1) + (v - 1)·p forwards, then one more before the first backward:
  // p = 4, v = 3 -> 6 + 8 + 1 = 15 chunks of L/(p·v) layers = L·(1 + 3/12) layers.
  CHECK(peak_in_flight_chunks(stage_schedule(4, 3, 16, 0)) == 15);
  CHECK(peak_in_flight_chunks(stage_schedule(4, 3, 16, 3)) == 9);  // (v - 1)·p + 1
}

TEST_CASE("interleaved with m = pp runs every forward first", "[models][schedule]") {
  CHECK(peak_in_flight_chunks(stage_schedule(4, 2, 4, 2)) == 8);
}

TEST_CASE("peak bytes weight each chunk by what it holds", "[models][schedule]") {
  // pp 2, one stage-1 micro-batch at a time: the peak is the larger chunk.
  CHECK(peak_in_flight_bytes(stage_schedule(2, 1, 4, 1), {5.0}) == 5.0);
  CHECK(peak_in_flight_bytes(stage_schedule(2, 1, 4, 0), {5.0}) == 10.0);
}
