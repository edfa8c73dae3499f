#include <catch2/catch.hpp>

#include "sim/report/walls.hpp"

using namespace wallsim;

namespace {

TimeSplit split_of(double step, double ideal, double compute, double tp, double dp, double bubble) {
  TimeSplit split;
  split.step_s = step;
  split.ideal_s = ideal;
  split.compute_s = compute;
  split.compute_inefficiency_s = compute - ideal;
  split.exposed_comm_s[category_slot(OpCategory::kTp)] = tp;
  split.exposed_comm_s[category_slot(OpCategory::kDp)] = dp;
  split.bubble_s = bubble;
  return split;
}

StageMemorySummary stage(double weights, double activations) {
  StageMemorySummary s;
  s.weights = weights;
  s.activations = activations;
  s.peak = weights + activations;
  return s;
}

}  // namespace

TEST_CASE("the larger of the compute and communication shares binds when memory fits",
          "[report][walls]") {
  // Step 10 s: ideal 5, compute 7 (2 s inefficiency), bubble 1 -> compute share 0.3;
  // exposed tp 0.5 + dp 1.5 -> communication share 0.2.
  const Walls walls = compute_walls(split_of(10, 5, 7, 0.5, 1.5, 1),
                                    ComputeExcess{{1.5, 0.5, 0, 0}}, stage(10, 30), 80, true);
  CHECK(walls.compute.share == Approx(0.3));
  CHECK(walls.communication.share == Approx(0.2));
  CHECK(walls.binding == "compute");
  CHECK(walls.compute.contributor == "gemm");  // 1.5 s of GEMM excess beats the 1 s bubble
  CHECK(walls.communication.contributor == "dp");
  CHECK(walls.memory.share == Approx(0.5));
  CHECK(walls.memory.contributor == "activations");
}

TEST_CASE("exposed communication larger than compute loss binds on communication",
          "[report][walls]") {
  const Walls walls = compute_walls(split_of(10, 6, 6.5, 4, 0, 0), ComputeExcess{{0.5, 0, 0, 0}},
                                    stage(10, 10), 80, true);
  CHECK(walls.binding == "communication");
  CHECK(walls.communication.contributor == "tp");
}

TEST_CASE("a peak that does not fit binds on memory whatever the time split", "[report][walls]") {
  const Walls walls = compute_walls(split_of(10, 5, 9, 0, 0, 0), ComputeExcess{{4, 0, 0, 0}},
                                    stage(60, 40), 80, false);
  CHECK(walls.binding == "memory");
  CHECK(walls.memory.share == Approx(1.25));
  CHECK(walls.memory.contributor == "weights");
}
