// A schedule added through the registry alone: GPipe (Huang et al. 2019), every forward of the
// step and then every backward. This file and its register_pipeline_schedule line are all it
// takes; the replayed step then shows the textbook bubble.
#include <catch2/catch.hpp>

#include "models/pipeline_schedule.hpp"
#include "sim/core/engine.hpp"
#include "sim/graph/replay.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

PipelineSchedule gpipe() {
  PipelineSchedule s;
  s.name = "gpipe";
  s.summary = "all forwards, then all backwards (GPipe)";
  s.rejects = [](const PipelineShape& shape) {
    return shape.vpp == 1 ? std::string() : "parallel.vpp: GPipe runs one chunk per stage";
  };
  s.order = [](const PipelineShape& shape, std::int64_t) {
    std::vector<ScheduleItem> items;
    for (std::int64_t mb = 0; mb < shape.microbatches; ++mb)
      items.push_back({Pass::kForward, mb, 0});
    for (std::int64_t mb = shape.microbatches; mb-- > 0;) items.push_back({Pass::kBackward, mb, 0});
    return items;
  };
  return s;
}

const PipelineSchedule& registered_gpipe() {
  static const PipelineSchedule& schedule = register_pipeline_schedule(gpipe());
  return schedule;
}

// Communication that takes no time.
class InstantComm final : public CommService {
 public:
  explicit InstantComm(Engine& engine) : engine_(engine) {}
  void start_collective(GroupIndex, std::uint32_t, Done done) override {
    engine_.schedule_after(Time::zero(), std::move(done));
  }
  void start_transfer(RankIndex, RankIndex, std::uint32_t, Done done) override {
    engine_.schedule_after(Time::zero(), std::move(done));
  }

 private:
  Engine& engine_;
};

// Only the transformer layers take time, so every stage has the same work per micro-batch.
class LayersOnly final : public ComputeService {
 public:
  Time duration(RankIndex, OpIndex, const Op& op, bool) override {
    return op.layer ? op.duration : Time::zero();
  }
};

struct Bubble {
  Time step;
  Time busy;  // one stage's compute
};

// pp stages of one layer each, m micro-batches, replayed with free communication.
Bubble replay_bubble(const std::string& schedule, int pp, int m) {
  nlohmann::json doc = base_config();
  doc["model"]["layers"] = pp;
  doc["parallel"] = {{"tp", 1}, {"pp", pp}};
  doc["num_gpus"] = pp;
  doc["training"]["global_batch"] = m;
  doc["training"]["schedule"] = schedule;
  const StepProgram program = build(doc);
  REQUIRE(program.graphs.size() == static_cast<std::size_t>(pp));
  Engine engine;
  InstantComm comm(engine);
  LayersOnly compute;
  Replay replay(engine, program.graphs, program.groups, comm, InvariantPolicy::kThrow, &compute);
  const ReplayResult result = replay.run();
  Bubble bubble{result.end, Time::zero()};
  const OpGraph& stage0 = program.graphs[0];
  for (OpIndex i = 0; i < stage0.size(); ++i)
    bubble.busy += compute.duration(0, i, stage0.op(i), false);
  return bubble;
}

}  // namespace

TEST_CASE("a schedule registered from outside is selected by training.schedule",
          "[models][schedule]") {
  registered_gpipe();
  CHECK(find_pipeline_schedule("gpipe") == &registered_gpipe());
  nlohmann::json doc = base_config();
  doc["training"]["schedule"] = "gpipe";
  CHECK(config_from(doc).layout.schedule == &registered_gpipe());
  doc["training"]["schedule"] = "gpipe-2";
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("1f1b") && Catch::Contains("interleaved") &&
                                          Catch::Contains("gpipe"));
}

TEST_CASE("GPipe's bubble is (p − 1)/(m + p − 1) of the step", "[models][schedule]") {
  registered_gpipe();
  // Each stage works m·(tF + tB) and, with free transfers, the step lasts (m + p − 1)·(tF + tB):
  // the first backward starts after m + p − 1 forward slots, the last ends m + p − 1 backward
  // slots later. So step·m = busy·(m + p − 1) exactly (durations are whole picoseconds), and the
  // idle share of the step, 1 − busy/step, is (p − 1)/(m + p − 1).
  for (const auto& [p, m] : std::vector<std::pair<int, int>>{{4, 8}, {2, 3}, {8, 4}}) {
    INFO("p " << p << ", m " << m);
    const Bubble b = replay_bubble("gpipe", p, m);
    REQUIRE(b.busy > Time::zero());
    CHECK(b.step.ps() * m == b.busy.ps() * (m + p - 1));
    CHECK(1.0 - b.busy.seconds() / b.step.seconds() ==
          Approx(static_cast<double>(p - 1) / (m + p - 1)).epsilon(1e-12));
  }
}

TEST_CASE("1F1B has GPipe's bubble with fewer micro-batches alive", "[models][schedule]") {
  // Narayanan et al. 2021 §2.2.1: PipeDream-flush keeps the bubble (p − 1)/(m + p − 1).
  const Bubble b = replay_bubble("1f1b", 4, 8);
  REQUIRE(b.busy > Time::zero());
  CHECK(b.step.ps() * 8 == b.busy.ps() * (8 + 4 - 1));
}
