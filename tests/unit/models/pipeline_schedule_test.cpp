#include "models/pipeline_schedule.hpp"

#include <catch2/catch.hpp>

using namespace wallsim::models;

namespace {

// Megatron's choice of schedule by vpp, as a run config without training.schedule gets it.
std::vector<ScheduleItem> stage_schedule(std::int64_t pp, std::int64_t vpp,
                                         std::int64_t microbatches, std::int64_t stage) {
  const PipelineSchedule* schedule = find_pipeline_schedule(vpp > 1 ? "interleaved" : "1f1b");
  REQUIRE(schedule != nullptr);
  return schedule->order({pp, vpp, microbatches}, stage);
}

std::int64_t peak_in_flight_chunks(const std::vector<ScheduleItem>& order) {
  return wallsim::models::peak_in_flight_chunks(order, false);
}

double peak_in_flight_bytes(const std::vector<ScheduleItem>& order,
                            const std::vector<double>& chunk_bytes) {
  return wallsim::models::peak_in_flight_bytes(order, chunk_bytes, false);
}

}  // namespace

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
  for (const auto& step : steps) forwards += step.forward() ? 1 : 0;
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

TEST_CASE("the registry lists the built-in schedules and finds them by name",
          "[models][schedule]") {
  const auto names = pipeline_schedule_names();
  REQUIRE(names.size() >= 2);
  CHECK(names[0] == "1f1b");
  CHECK(names[1] == "interleaved");
  CHECK(find_pipeline_schedule("zero-bubble-h9") == nullptr);
  // Each rejects the shapes the other takes.
  CHECK(find_pipeline_schedule("1f1b")->rejects({4, 2, 8}) != "");
  CHECK(find_pipeline_schedule("1f1b")->rejects({4, 1, 8}) == "");
  CHECK(find_pipeline_schedule("interleaved")->rejects({4, 1, 8}) != "");
  CHECK_THROWS(register_pipeline_schedule(*find_pipeline_schedule("1f1b")));  // name taken
}

TEST_CASE("interleaved refuses micro-batches that are not a multiple of pp", "[models][schedule]") {
  // Megatron-Core groups micro-batches by pp per model chunk, raises on a group larger than the
  // micro-batches and on a last group smaller than pp: 1, 4 or 7 micro-batches over pp 8 (fewer
  // than one group) and 9 or 12 (a remainder) are refused; 8, 16 and 24 run.
  const PipelineSchedule* interleaved = find_pipeline_schedule("interleaved");
  for (const std::int64_t m : {9, 12, 15, 17}) {
    const std::string why = interleaved->rejects({8, 4, m});
    CHECK(why.find("multiple of pp = 8") != std::string::npos);
    CHECK(why.find(std::to_string(m) + " micro-batches") != std::string::npos);
  }
  for (const std::int64_t m : {1, 4, 7}) {
    const std::string why = interleaved->rejects({8, 4, m});
    CHECK(why.find("fewer than pp = 8") != std::string::npos);
    CHECK(why.find(std::to_string(m) + " micro-batches") != std::string::npos);
  }
  for (const std::int64_t m : {8, 16, 24}) CHECK(interleaved->rejects({8, 4, m}) == "");
  // Every stage of an accepted shape gets each (micro-batch, chunk) forward and backward once.
  for (std::int64_t stage = 0; stage < 8; ++stage) {
    CHECK(interleaved->order({8, 4, 24}, stage).size() == 2 * 24 * 4);
  }
}

TEST_CASE("a placement that is not a bijection is refused", "[models][schedule]") {
  PipelineSchedule broken;
  broken.name = "broken";
  broken.virtual_stage = [](const PipelineShape&, std::int64_t stage, std::int64_t) {
    return stage;  // both chunks of a stage on one virtual stage
  };
  CHECK_THROWS_AS(VirtualStages(broken, {2, 2, 4}), std::logic_error);
}

TEST_CASE("a schedule with W passes frees a chunk's activations at its W, not its B",
          "[models][schedule]") {
  // F0 F1 B0 W0 B1 W1: both micro-batches are alive until W0.
  const std::vector<ScheduleItem> order{{Pass::kForward, 0, 0},  {Pass::kForward, 1, 0},
                                        {Pass::kBackward, 0, 0}, {Pass::kWeight, 0, 0},
                                        {Pass::kBackward, 1, 0}, {Pass::kWeight, 1, 0}};
  CHECK(wallsim::models::peak_in_flight_chunks(order, true) == 2);
  CHECK(wallsim::models::peak_in_flight_bytes(order, {3.0}, true) == 6.0);
  // Bytes freed by the backward itself (the logits: 5 per micro-batch) go at B: after F1 both
  // micro-batches hold 3 + 5; B0 drops micro-batch 0's 5, W0 its 3.
  CHECK(wallsim::models::peak_in_flight_bytes(order, {3.0}, true, {5.0}) == 16.0);
  const std::vector<ScheduleItem> staggered{{Pass::kForward, 0, 0}, {Pass::kBackward, 0, 0},
                                            {Pass::kForward, 1, 0}, {Pass::kBackward, 1, 0},
                                            {Pass::kWeight, 0, 0},  {Pass::kWeight, 1, 0}};
  // F0 (8), B0 (3), F1 (11), B1 (6): the logits never overlap, the W inputs do.
  CHECK(wallsim::models::peak_in_flight_bytes(staggered, {3.0}, true, {5.0}) == 11.0);
}
