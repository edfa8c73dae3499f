// The simulated activation peak of each stage against the analytical memory report.
#include <catch2/catch.hpp>

#include "models/activation_memory.hpp"
#include "models/memory.hpp"
#include "models/wgrad_buffers.hpp"
#include "sim/core/engine.hpp"
#include "sim/graph/replay.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// Peak bytes above the static ones, per simulated rank.
std::vector<double> simulated_activation_peaks(const StepProgram& program) {
  Engine engine;
  FixedDelayComm comm(engine, Time::from_us(20));
  Replay replay(engine, program.graphs, program.groups, comm);
  const ReplayResult result = replay.run();
  std::vector<double> peaks;
  for (std::size_t r = 0; r < program.graphs.size(); ++r) {
    peaks.push_back(result.ranks[r].peak_bytes - program.graphs[r].static_bytes);
  }
  return peaks;
}

json pipeline_config() {
  json doc = base_config();
  doc["model"]["layers"] = 8;
  doc["parallel"] = {{"tp", 2}, {"sequence_parallel", true}, {"pp", 4}};
  doc["num_gpus"] = 16;                  // dp 2
  doc["training"]["global_batch"] = 16;  // 8 micro-batches per DP rank
  doc["training"]["distributed_optimizer"] = true;
  doc["training"]["overlap"] = {{"dp_grad_reduce", true}, {"dp_param_gather", true}};
  return doc;
}

void check_peaks_match_report(const json& doc, bool last_stage_too = true) {
  const RunConfig config = config_from(doc);
  const StepProgram program = build_step(config, h100(), Fidelity::kSymmetric);
  const MemoryReport report =
      memory_report(config.model, config.layout, config.training, h100().profile().hbm_bytes);
  const auto peaks = simulated_activation_peaks(program);
  for (std::size_t s = 0; s < peaks.size(); ++s) {
    INFO("stage " << s);
    if (!last_stage_too && s + 1 == peaks.size()) continue;
    const StageMemory& stage = report.stages[s];
    CHECK(program.graphs[s].static_bytes == Approx(stage.weights + stage.grads + stage.optimizer +
                                                   stage.buffers + stage.wgrad_placeholders));
    // The output layer's placeholder and the embedding's gradient are allocated and freed by
    // the backward's ops, as the report's replay adds them.
    CHECK(peaks[s] == Approx(stage.activations + stage.grad_transients).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("the simulated 1F1B activation peak equals the analytical one on every stage",
          "[models][step][memory]") {
  // Stage s holds min(p − s, m) micro-batches of its layers at its peak (plus the embedding
  // on stage 0 and the logits on the last stage), exactly what memory_report counts.
  check_peaks_match_report(pipeline_config());
}

TEST_CASE("the simulated interleaved activation peak equals the analytical one",
          "[models][step][memory]") {
  json doc = pipeline_config();
  doc["parallel"]["vpp"] = 2;
  check_peaks_match_report(doc);
}

TEST_CASE("zero-bubble schedules keep a micro-batch's tensors until its W, as the report counts",
          "[models][step][memory][zero_bubble]") {
  // ZB-H1 holds p micro-batches between F and W on every stage, ZB-H2 2p − 1 (here m = 8, so
  // min(2p − 1, m) = 7); the report replays the same order (peak_in_flight_chunks with W).
  for (const std::string schedule : {"zb_h1", "zb_h2"}) {
    INFO(schedule);
    json doc = pipeline_config();
    doc["training"]["schedule"] = schedule;
    check_peaks_match_report(doc);
  }
}

TEST_CASE("V-shape schedules keep what the report counts: ZB-V 2p chunks, DualPipeV 2p + 1",
          "[models][step][memory][v_shape]") {
  // One layer per virtual stage, 8 micro-batches per DP rank (2p, DualPipeV's least). The
  // orders' peaks (v_schedule_test.cpp): 2p chunk forwards alive between F and W for ZB-V, 2p + 1
  // for DualPipeV, on every stage; stage 0 also holds the embedding's and the logits' bytes.
  for (const std::string schedule : {"zbv", "dualpipev"}) {
    INFO(schedule);
    json doc = pipeline_config();
    doc["parallel"]["vpp"] = 2;
    doc["training"]["schedule"] = schedule;
    check_peaks_match_report(doc);
    const RunConfig config = config_from(doc);
    const MemoryReport report =
        memory_report(config.model, config.layout, config.training, h100().profile().hbm_bytes);
    for (const StageMemory& stage : report.stages) {
      CHECK(stage.microbatches_in_flight == (schedule == "zbv" ? 8 : 9));
    }
    CHECK(report.stages[0].embedding);
    CHECK(report.stages[0].output_layer);
    CHECK_FALSE(report.stages[3].output_layer);
    // Every rank simulated: the transfers across the V pair up and the step ends.
    const StepProgram program = build(doc, Fidelity::kFull);
    Engine engine;
    FixedDelayComm comm(engine, Time::from_us(20));
    Replay replay(engine, program.graphs, program.groups, comm);
    CHECK(replay.run().end > Time::zero());
  }
}

TEST_CASE("full recompute holds layer inputs plus one layer's transient at the peak",
          "[models][step][memory]") {
  json doc = pipeline_config();
  doc["training"]["recompute"] = "full";
  check_peaks_match_report(doc, /*last_stage_too=*/false);
  // The last stage frees its logits before the first layer's recompute starts, so its peak is
  // its layer inputs plus the larger of the output activations (with the output layer's
  // weight-gradient placeholder, models/wgrad_buffers.hpp) and the transient; the
  // analytical report, which adds both, is an upper bound there. One micro-batch is in flight
  // on the last stage (min(p − s, m) = 1) and it holds 2 layers.
  const RunConfig config = config_from(doc);
  const ActivationSetting setting = activation_setting(config.training, 2, 1, true);
  const double inputs = 2 * layer_activation_bytes(config.model, setting);
  const double output =
      output_activation_bytes(config.model, setting) +
      output_wgrad_placeholder_bytes(config.model, config.layout, config.layout.sizes.pp - 1);
  const double expected =
      inputs + std::max(output, layer_recompute_transient_bytes(config.model, setting));
  const auto peaks = simulated_activation_peaks(build_step(config, h100(), Fidelity::kSymmetric));
  CHECK(peaks.back() == Approx(expected).epsilon(1e-12));
}

TEST_CASE("a step replays to the end without deadlock in full fidelity", "[models][step]") {
  json doc = pipeline_config();
  doc["parallel"]["vpp"] = 2;
  doc["training"]["overlap"]["tp_comm"] = true;
  const StepProgram program = build(doc, Fidelity::kFull);
  Engine engine;
  FixedDelayComm comm(engine, Time::from_us(20));
  Replay replay(engine, program.graphs, program.groups, comm);
  CHECK(replay.run().end > Time::zero());
}

TEST_CASE("interleaving on two stages finishes: activations and gradients flow both ways",
          "[models][step]") {
  // With pp = 2 stage 1 sends activations (chunk 0 -> chunk 1 of stage 0) and gradients to
  // stage 0 alike; transfers must pair by kind, not only by order between two ranks.
  json doc = pipeline_config();
  doc["parallel"]["pp"] = 2;
  doc["parallel"]["vpp"] = 2;
  doc["num_gpus"] = 8;
  doc["training"]["global_batch"] = 8;
  const StepProgram program = build(doc, Fidelity::kSymmetric);
  Engine engine;
  FixedDelayComm comm(engine, Time::from_us(20));
  Replay replay(engine, program.graphs, program.groups, comm);
  CHECK(replay.run().end > Time::zero());
}
