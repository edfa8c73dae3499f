#include "models/layer_placement.hpp"

#include <optional>

#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"

using wallsim::InputError;
using wallsim::models::LayerPlacement;
using wallsim::models::PipelineSchedule;
using wallsim::models::PipelineShape;
using wallsim::models::PlacementRequest;
using wallsim::models::VirtualStages;

namespace {

// place_layers with Megatron's chunk-major virtual stages (both built-in schedules use it).
LayerPlacement place(std::int64_t layers, std::int64_t pp, std::int64_t vpp,
                     std::optional<std::int64_t> first, std::optional<std::int64_t> last,
                     const std::string& where) {
  PlacementRequest request{layers, pp, vpp, first, last, {}, {}};
  PipelineSchedule chunk_major;
  chunk_major.virtual_stage = wallsim::models::chunk_major_virtual_stage;
  request.virtual_stages = VirtualStages(chunk_major, {request.pp, request.vpp, 1});
  return wallsim::models::place_layers(request, where);
}

std::vector<std::int64_t> stage_totals(const LayerPlacement& placement) {
  std::vector<std::int64_t> totals;
  for (const auto& stage : placement.stages) totals.push_back(stage.total());
  return totals;
}

}  // namespace

TEST_CASE("layers that divide by pp split evenly in order", "[models][placement]") {
  const auto placement = place(80, 4, 1, {}, {}, "run.json");
  CHECK(stage_totals(placement) == std::vector<std::int64_t>{20, 20, 20, 20});
  CHECK(placement.stages[2].chunks[0].first_layer == 40);
  CHECK_FALSE(placement.uneven);
  CHECK(placement.note.empty());
}

TEST_CASE("virtual chunks take layers chunk-major, as Megatron numbers virtual stages",
          "[models][placement]") {
  // 16 layers, pp 2, vpp 2: virtual stage c·pp + s; stage 0 holds 0-3 and 8-11.
  const auto placement = place(16, 2, 2, {}, {}, "run.json");
  REQUIRE(placement.stages[0].chunks.size() == 2);
  CHECK(placement.stages[0].chunks[0].first_layer == 0);
  CHECK(placement.stages[1].chunks[0].first_layer == 4);
  CHECK(placement.stages[0].chunks[1].first_layer == 8);
  CHECK(placement.stages[1].chunks[1].first_layer == 12);
  CHECK(placement.stages[1].chunks[1].count == 4);
}

TEST_CASE("first/last stage layers take their counts, the middle stages share the rest",
          "[models][placement]") {
  // Llama 3.1 405B: 126 layers on 16 stages, 7 + 14·8 + 7.
  const auto placement = place(126, 16, 1, 7, 7, "run.json");
  const auto totals = stage_totals(placement);
  CHECK(totals.front() == 7);
  CHECK(totals.back() == 7);
  CHECK(std::all_of(totals.begin() + 1, totals.end() - 1, [](auto n) { return n == 8; }));
  CHECK(placement.stages[1].chunks[0].first_layer == 7);
  CHECK(placement.uneven);
  // Only the first stage given: the other 3 stages share 30 - 6 = 24 layers.
  CHECK(stage_totals(place(30, 4, 1, 6, {}, "run.json")) == std::vector<std::int64_t>{6, 8, 8, 8});
}

TEST_CASE("layers that do not divide by pp are spread evenly, middle stages first",
          "[models][placement]") {
  // 10 over 4: 2 each, 2 extra to stages 1 and 2.
  const auto placement = place(10, 4, 1, {}, {}, "run.json");
  CHECK(stage_totals(placement) == std::vector<std::int64_t>{2, 3, 3, 2});
  CHECK(placement.uneven);
  CHECK_FALSE(placement.note.empty());
  // 11 over 4: after the middle stages, the first one.
  CHECK(stage_totals(place(11, 4, 1, {}, {}, "run.json")) == std::vector<std::int64_t>{3, 3, 3, 2});
}

TEST_CASE("impossible pipeline splits are rejected with the reason", "[models][placement]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(place(3, 4, 1, {}, {}, "run.json"),
                    Contains("parallel.pp") && Contains("fewer than pp·vpp"));
  CHECK_THROWS_WITH(place(31, 4, 1, 7, 7, "run.json"),
                    Contains("parallel.first_stage_layers") && Contains("divide evenly"));
  CHECK_THROWS_WITH(place(10, 2, 1, 11, {}, "run.json"), Contains("divide evenly"));
  CHECK_THROWS_WITH(place(32, 4, 4, 6, 6, "run.json"),
                    Contains("parallel.first_stage_layers") && Contains("divide by vpp"));
  CHECK_THROWS_AS(place(32, 1, 1, 6, {}, "run.json"), InputError);
}

TEST_CASE("layers follow the schedule's virtual stages, not the chunk-major numbering",
          "[models][placement]") {
  // A V-shaped placement (stage s holds virtual stages s and 2p − 1 − s): with p = 2 and eight
  // layers, stage 0 holds layers 0–1 and 6–7, stage 1 holds 2–3 and 4–5.
  PipelineSchedule v_shape;
  v_shape.virtual_stage = [](const PipelineShape& shape, std::int64_t stage, std::int64_t chunk) {
    return chunk == 0 ? stage : 2 * shape.pp - 1 - stage;
  };
  PlacementRequest request{8, 2, 2, {}, {}, {}, {}};
  request.virtual_stages = VirtualStages(v_shape, {2, 2, 1});
  const LayerPlacement placement = wallsim::models::place_layers(request, "run.json");
  CHECK(placement.stages[0].chunks[0].first_layer == 0);
  CHECK(placement.stages[0].chunks[1].first_layer == 6);
  CHECK(placement.stages[1].chunks[0].first_layer == 2);
  CHECK(placement.stages[1].chunks[1].first_layer == 4);
  CHECK(request.virtual_stages.place(3).stage == 0);  // the output layer's stage
}
