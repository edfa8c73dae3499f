#include <vector>

#include <catch2/catch.hpp>

#include "models/layout.hpp"
#include "models/memory.hpp"
#include "models/sweep/sweep_config.hpp"
#include "models/sweep/sweep_evaluate.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

const std::string kConfig =
    std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/llama3-8b-8gpu.json";
constexpr double kHbmBytes = 40.0 * 1024 * 1024 * 1024;  // small, so memory prunes some points

// The brute-force answer for one point, built from the typed specs directly (not from the
// point's JSON): is the layout valid under Megatron's rules as make_layout states them (plus
// the sweep's even interleaving split and the tp = 1 duplicate), and does it fit?
PointStage brute_force_stage(const SweepBase& base, const SweepPoint& p) {
  const RunConfig& c = base.parsed;
  ParallelSpec parallel;
  parallel.tp = p.tp;
  parallel.sequence_parallel = p.sequence_parallel && p.tp > 1;
  parallel.cp = p.cp;
  parallel.pp = p.pp;
  parallel.vpp = p.vpp;
  TrainingSpec training = c.training;
  training.micro_batch = p.micro_batch;
  training.recompute = p.recompute;
  training.distributed_optimizer = p.distributed_optimizer;
  training.schedule = nullptr;  // Megatron's choice: interleaved when vpp > 1
  if (p.vpp > 1 && c.model.layers % (p.pp * p.vpp) != 0) return PointStage::pruned_by_layout;
  if (p.tp == 1 && !p.sequence_parallel) return PointStage::pruned_by_layout;
  Layout layout;
  try {
    layout = make_layout(c.model, parallel, training, base.num_gpus, "brute force");
  } catch (const InputError&) {
    return PointStage::pruned_by_layout;
  }
  return memory_report(c.model, layout, training, kHbmBytes).fits_in_memory
             ? PointStage::to_simulate
             : PointStage::pruned_by_memory;
}

}  // namespace

TEST_CASE(
    "pruning keeps exactly the valid layouts that fit with the least recompute, against brute "
    "force",
    "[sweep]") {
  // Llama 3 8B on 8 GPUs with a global batch of 16: the batch rule, tp | heads, pp·vpp | layers
  // and the memory check all bite.
  const SweepBase base = load_sweep_base(kConfig, {"training.global_batch=16"}, 8);
  SweepSpace space = default_space({base.parsed.model.layers, 8, 8});
  apply_vary(space, "sp=on,off");
  apply_vary(space, "dist_opt=on,off");
  apply_vary(space, "tp=1,2,3,4,8");  // 3 divides no head count: always pruned
  std::int64_t counts[4] = {0, 0, 0, 0};
  std::vector<ScreenedPoint> screened;
  std::vector<PointStage> expected_stages;
  for (std::int64_t i = 0; i < space.size(); ++i) {
    screened.push_back(screen_point(base, space, i, kHbmBytes));
    const PointStage expected = brute_force_stage(base, screened.back().point);
    INFO(point_id(screened.back().point) << ": " << screened.back().reason);
    REQUIRE(screened.back().stage == expected);
    CHECK(screened.back().config.has_value() == (expected == PointStage::to_simulate));
    expected_stages.push_back(expected);
  }
  // Recompute dominance: a point that would be simulated is pruned exactly when the same layout
  // with a lighter recompute (none < selective < full) would be simulated too.
  prune_dominated_recompute(base, space, screened, kHbmBytes);
  for (std::int64_t i = 0; i < space.size(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    PointStage expected = expected_stages[k];
    if (expected == PointStage::to_simulate) {
      for (std::int64_t j = 0; j < space.size(); ++j) {
        SweepPoint lighter = space.at(j);
        const Recompute r = lighter.recompute;
        lighter.recompute = screened[k].point.recompute;
        if (lighter == screened[k].point && r < screened[k].point.recompute &&
            expected_stages[static_cast<std::size_t>(j)] == PointStage::to_simulate) {
          expected = PointStage::pruned_by_recompute;
        }
      }
    }
    INFO(point_id(screened[k].point) << ": " << screened[k].reason);
    REQUIRE(screened[k].stage == expected);
    CHECK(screened[k].config.has_value() == (expected == PointStage::to_simulate));
    ++counts[static_cast<int>(expected)];
  }
  // Not vacuous: every stage has points.
  CHECK(counts[static_cast<int>(PointStage::pruned_by_layout)] > 0);
  CHECK(counts[static_cast<int>(PointStage::pruned_by_memory)] > 0);
  CHECK(counts[static_cast<int>(PointStage::pruned_by_recompute)] > 0);
  CHECK(counts[static_cast<int>(PointStage::to_simulate)] > 0);
}

TEST_CASE("a point's config is the base with the point's layout written in", "[sweep]") {
  const SweepBase base = load_sweep_base(kConfig, {}, 16);
  const SweepPoint p{4,
                     true,
                     1,
                     2,
                     2,
                     "",
                     1,
                     1,
                     MoeDispatcher::kAllToAll,
                     2,
                     Recompute::full,
                     true,
                     false,
                     std::nullopt,
                     std::nullopt,
                     std::nullopt,
                     std::nullopt};
  const RunConfig config = run_config_from_json(point_config(base, p), "point.json");
  CHECK(config.num_gpus == 16);
  CHECK(config.layout.sizes.tp == 4);
  CHECK(config.layout.sequence_parallel);
  CHECK(config.layout.sizes.pp == 2);
  CHECK(config.layout.vpp == 2);
  CHECK(config.layout.sizes.dp == 2);
  CHECK(config.training.micro_batch == 2);
  CHECK(config.training.recompute == Recompute::full);
  CHECK_FALSE(config.training.overlap.tp_comm);
  CHECK_FALSE(config.training.overlap.dp_grad_reduce);
  CHECK(config.model.layers == 32);  // model inline: no path left to resolve
  CHECK(point_config(base, p).at("model").is_object());
  CHECK(config.layout.data_sharding == DataSharding::kOptimizer);
  // A stated sharding is written in and decides the distributed optimizer.
  SweepPoint fsdp = p;
  fsdp.sharding = DataSharding::kParams;
  fsdp.distributed_optimizer = true;
  const RunConfig sharded = run_config_from_json(point_config(base, fsdp), "point.json");
  CHECK(sharded.layout.data_sharding == DataSharding::kParams);
  // A stated offload replaces the base's training.offload; the CPU optimizer brings the
  // precision-aware optimizer Megatron requires for it.
  SweepPoint offload = p;
  offload.offload = SweepOffload::kActivations;
  CHECK(
      run_config_from_json(point_config(base, offload), "point.json").training.offload_activations);
  offload.offload = SweepOffload::kOptimizer;
  const RunConfig cpu = run_config_from_json(point_config(base, offload), "point.json");
  CHECK(cpu.training.offload_optimizer_fraction == 1.0);
  CHECK(cpu.training.optimizer.precision_aware);
  CHECK_FALSE(cpu.training.offload_activations);
  offload.offload = SweepOffload::kNone;
  const RunConfig none = run_config_from_json(point_config(base, offload), "point.json");
  CHECK_FALSE(none.training.offload_activations);
  CHECK(none.training.offload_optimizer_fraction == 0);
  // A stated CUDA-graph scope replaces the base's training.cuda_graphs.
  SweepPoint graphs = p;
  graphs.cuda_graphs = CudaGraphs::kPerLayer;
  CHECK(run_config_from_json(point_config(base, graphs), "point.json").training.cuda_graphs ==
        CudaGraphs::kPerLayer);
}

TEST_CASE("the overlap knob overlaps shared experts where Megatron-Core can", "[sweep]") {
  // DeepSeek-V3's shape has a shared expert; Megatron-Core overlaps it with the alltoall and
  // flex dispatchers only, so an allgather point keeps it in line (and is not refused).
  const SweepBase base = load_sweep_base(
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/deepseek-v3-256gpu-gb200-nvl72.json",
      {}, 256);
  SweepPoint p{1,
               false,
               1,
               4,
               4,
               "",
               64,
               1,
               MoeDispatcher::kAllToAll,
               1,
               Recompute::full,
               true,
               true,
               std::nullopt,
               std::nullopt,
               std::nullopt,
               std::nullopt};
  CHECK(point_run_config(base, p).training.overlap.shared_expert);
  p.dispatcher = MoeDispatcher::kAllGather;
  CHECK_FALSE(point_run_config(base, p).training.overlap.shared_expert);
  p.dispatcher = MoeDispatcher::kAllToAll;
  p.overlap = false;
  CHECK_FALSE(point_run_config(base, p).training.overlap.shared_expert);
  // Without shared experts the key is left alone (the base's, here false).
  const SweepBase dense = load_sweep_base(kConfig, {}, 8);
  CHECK_FALSE(point_config(dense, p).at("training").at("overlap").contains("shared_expert"));
}

TEST_CASE("layout prunes are keyed by the rule that failed", "[sweep]") {
  const SweepBase base = load_sweep_base(kConfig, {}, 12);  // 12 GPUs: tp = 3 divides them
  SweepSpace space;
  space.tp = {3};
  const ScreenedPoint s = screen_point(base, space, 0, kHbmBytes);
  CHECK(s.stage == PointStage::pruned_by_layout);
  CHECK(s.reason_key == "parallel.tp");
  CHECK_THAT(s.reason, Catch::Contains("must divide the attention heads"));
}

TEST_CASE("screening sizes the cuBLAS workspaces for the sweep's GPU, as the run does", "[sweep]") {
  // The analytical peak of a point is memory_report's for the GPU's compute capability: an A100
  // (80) keeps smaller cuBLAS workspaces than a Hopper GPU (90), so its screened peak is lower.
  const SweepBase base = load_sweep_base(kConfig, {}, 8);
  SweepSpace space;
  space.tp = {2};
  const ScreenedPoint hopper = screen_point(base, space, 0, 1e12, 90);
  const ScreenedPoint ampere = screen_point(base, space, 0, 1e12, 80);
  REQUIRE(ampere.config);
  const RunConfig& c = *ampere.config;
  CHECK(ampere.peak_bytes == memory_report(c.model, c.layout, c.training, 1e12, 80).peak_bytes);
  CHECK(ampere.peak_bytes < hopper.peak_bytes);
}

TEST_CASE("a V-shape schedule is pruned where vpp is not 2, with the schedule's reason",
          "[sweep]") {
  const SweepBase base = load_sweep_base(kConfig, {}, 8);
  SweepSpace space;
  space.tp = {1};
  space.pp = {2};
  space.vpp = {1, 2};
  space.schedule = {"zbv"};
  const ScreenedPoint one_chunk = screen_point(base, space, 0, 1e12);
  CHECK(one_chunk.stage == PointStage::pruned_by_layout);
  CHECK(one_chunk.reason_key == "training.schedule");
  CHECK_THAT(one_chunk.reason, Catch::Contains("parallel.vpp = 1"));
  const ScreenedPoint v_shape = screen_point(base, space, 1, 1e12);
  CHECK(v_shape.stage == PointStage::to_simulate);
  REQUIRE(v_shape.config);
  CHECK(v_shape.config->layout.schedule->name == "zbv");
}
