// A long 1F1B step extrapolated from the steps of pp + 1 and pp + 2 micro-batches
// (steady_state_microbatches, sweep_evaluate.hpp) against the same step simulated whole.
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"
#include "models/sweep/sweep_evaluate.hpp"
#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_runner.hpp"
#include "models/sweep/sweep_writers.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

std::string example(const std::string& name) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/" + name + ".json";
}

ScreenedPoint screened(const RunConfig& config) {
  ScreenedPoint s;
  s.point.tp = config.layout.sizes.tp;
  s.point.pp = config.layout.sizes.pp;
  s.stage = PointStage::to_simulate;
  s.config = config;
  return s;
}

struct Case {
  std::string example;
  std::vector<std::string> overrides;
};

}  // namespace

TEST_CASE("only long 1F1B steps are extrapolated, from pp + 1 and pp + 2 micro-batches",
          "[sweep]") {
  const std::string llama = example("llama3-8b-8gpu");
  // 8 GPUs at tp2 pp2 leave dp = 2: global batch 16 at micro-batch 1 is 8 micro-batches, more
  // than 2·pp + 3 = 7, so the two short steps (3 + 4 micro-batches) simulate fewer than 8.
  const RunConfig long_1f1b =
      load_run_config(llama, {"parallel.tp=2", "parallel.pp=2", "training.global_batch=16"});
  const auto m = steady_state_microbatches(long_1f1b);
  REQUIRE(m);
  CHECK(m->first == 3);
  CHECK(m->second == 4);
  // 7 micro-batches = 2·pp + 3: extrapolating would simulate as many.
  CHECK_FALSE(steady_state_microbatches(
      load_run_config(llama, {"parallel.tp=2", "parallel.pp=2", "training.global_batch=14"})));
  // One stage: no pipeline to fill.
  CHECK_FALSE(steady_state_microbatches(
      load_run_config(llama, {"parallel.tp=2", "training.global_batch=64"})));
  // The interleaved schedule (32 layers in pp·vpp = 4 chunks) is simulated whole.
  CHECK_FALSE(steady_state_microbatches(load_run_config(
      llama, {"parallel.tp=2", "parallel.pp=2", "parallel.vpp=2", "training.global_batch=16"})));
  // Sampled steps: their micro-batches differ.
  CHECK_FALSE(steady_state_microbatches(long_1f1b, 2));
  CHECK_FALSE(steady_state_microbatches(load_run_config(
      llama,
      {"parallel.tp=2", "parallel.pp=2", "training.global_batch=16", "variability.gpu_cv=0.02"})));
}

TEST_CASE("an extrapolated 1F1B step equals the step simulated whole", "[sweep]") {
  // Dense and MoE, each dispatcher, both network models, overlap on and off, selective and full
  // recompute, symmetric and full fidelity, a host-bound MoE step (Qwen3-30B-A3B's 512-token
  // sequences); each with more than 2·pp + 3 micro-batches.
  const std::vector<Case> cases = {
      {"llama3-8b-8gpu", {"parallel.tp=2", "parallel.pp=4", "training.global_batch=24"}},
      {"llama3-8b-8gpu",
       {"parallel.tp=1", "parallel.pp=4", "training.global_batch=32",
        "simulation.network=analytical", "training.recompute=full"}},
      {"llama3-8b-8gpu",
       {"parallel.tp=2", "parallel.pp=2", "training.global_batch=16", "simulation.fidelity=full",
        "training.overlap.dp_grad_reduce=false", "training.overlap.dp_param_gather=false"}},
      {"qwen3-30b-a3b-8gpu", {"parallel.pp=2", "parallel.ep=4", "training.global_batch=48"}},
      {"qwen3-30b-a3b-8gpu",
       {"parallel.pp=4", "parallel.ep=2", "parallel.moe_dispatcher=allgather",
        "training.global_batch=24", "training.recompute=selective"}},
      {"mixtral-8x7b-64gpu", {}},
  };
  const Profile profile = load_profile(shipped_profile_path("h100-sxm"));
  for (const Case& c : cases) {
    const RunConfig config = load_run_config(example(c.example), c.overrides);
    std::string what = c.example;
    for (const auto& o : c.overrides) what += " " + o;
    INFO(what);
    REQUIRE(steady_state_microbatches(config));
    const RunSummary whole = simulate(config, profile.gpu, profile.comm).summary;
    const SweepRow row =
        simulate_point(screened(config), profile.gpu, profile.comm, profile.gpu.hbm_bytes);
    REQUIRE_FALSE(row.failed());
    CHECK(row.extrapolated);
    CHECK(row.step_time_s == Approx(whole.iteration_time_s).epsilon(1e-9));
    CHECK(row.tokens_per_s_per_gpu == Approx(whole.tokens_per_s_per_gpu).epsilon(1e-9));
    CHECK(row.mfu == Approx(whole.mfu).epsilon(1e-9));
    CHECK(row.peak_bytes == whole.peak_bytes);
    CHECK(row.fits == whole.fits_in_memory);
    CHECK(row.binding == whole.walls.binding);
    // With every micro-batch simulated, the row is the whole step's.
    const SweepRow all =
        simulate_point(screened(config), profile.gpu, profile.comm, profile.gpu.hbm_bytes, 1, true);
    CHECK_FALSE(all.extrapolated);
    CHECK(all.step_time_s == whole.iteration_time_s);
  }
}

TEST_CASE("a sweep with every micro-batch simulated ranks the same rows", "[sweep]") {
  SweepBase base = load_sweep_base(
      example("llama3-8b-8gpu"), {"simulation.network=analytical", "training.global_batch=32"}, 8);
  const Profile profile = load_profile(shipped_profile_path(base.parsed.cluster.gpu));
  SweepSpace space;
  space.tp = {1, 2, 4};
  space.pp = {1, 2, 4};
  space.vpp = {1, 2};
  const SweepHardware hw{profile.gpu, profile.comm, profile.gpu.hbm_bytes};
  SweepRunOptions options;
  options.jobs = 2;
  const SweepReport extrapolated = run_sweep(base, space, hw, options);
  options.all_microbatches = true;
  const SweepReport whole = run_sweep(base, space, hw, options);
  CHECK(extrapolated.fingerprint != whole.fingerprint);
  REQUIRE(extrapolated.rows.size() == whole.rows.size());
  int rows_extrapolated = 0;
  for (std::size_t i = 0; i < whole.rows.size(); ++i) {
    const SweepRow& e = extrapolated.rows[i];
    const SweepRow& w = whole.rows[i];
    INFO(w.id);
    CHECK(e.id == w.id);  // the same order
    CHECK(e.step_time_s == Approx(w.step_time_s).epsilon(1e-9));
    CHECK(e.binding == w.binding);
    CHECK_FALSE(w.extrapolated);
    // Extrapolated exactly where the schedule is 1F1B over pp > 1 stages with more than
    // 2·pp + 3 micro-batches (32 / dp of them; vpp = 2 runs the interleaved schedule).
    const bool expected =
        e.point.pp > 1 && e.point.vpp == 1 && e.num_microbatches > 2 * e.point.pp + 3;
    CHECK(e.extrapolated == expected);
    CHECK(row_from_json(row_to_json(e), "journal").extrapolated == e.extrapolated);
    rows_extrapolated += e.extrapolated;
  }
  CHECK(rows_extrapolated >= 3);
  std::ostringstream a, b;
  write_sweep_csv(extrapolated, a);
  write_sweep_csv(whole, b);
  CHECK(a.str().find(",config,extrapolated\n") != std::string::npos);
  CHECK(a.str().find(".json,true\n") != std::string::npos);
  CHECK(b.str().find(".json,true\n") == std::string::npos);
}

TEST_CASE("a pipeline of uneven stages still speeding up is simulated whole", "[sweep]") {
  // Qwen3-235B-A22B cut to 47 layers over 32 stages (15 of two layers, 17 of one), expert
  // tensor parallelism across the stage's 4 GPUs, full recompute: the step grows by 32.1 ms per
  // micro-batch from 33 to 66 micro-batches and by 33–35 ms from about 2·pp on, as the two-layer
  // stages run out of idle gaps. A line through the steps of pp + 1 and pp + 2 micro-batches
  // undershoots the 128-micro-batch step by about 3%; the guard sees the two-layer stages' own
  // work grow by more per micro-batch than the step does and refuses it.
  const RunConfig config = load_run_config(
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/bench/qwen3-235b-256gpu-ep32.json",
      {"num_gpus=128", "model.layers=47", "parallel.tp=2", "parallel.pp=32", "parallel.vpp=1",
       "parallel.ep=1", "parallel.etp=4", "training.recompute=full", "training.global_batch=256"});
  const auto m = steady_state_microbatches(config);
  REQUIRE(m);
  CHECK(m->first == 33);
  const Profile profile = load_profile(shipped_profile_path("h100-sxm"));
  auto step = [&](std::int64_t microbatches) {
    // dp = 128 / (tp·pp) = 2 at micro-batch 1: two sequences per micro-batch.
    const RunConfig short_config =
        variant_of(config, {"training.global_batch=" + std::to_string(2 * microbatches)});
    return simulate(short_config, profile.gpu, profile.comm).summary.iteration_time_s;
  };
  const double a = step(m->first);
  const double b = step(m->second);
  const double line = b + static_cast<double>(128 - m->second) * (b - a);
  const double whole = simulate(config, profile.gpu, profile.comm).summary.iteration_time_s;
  CHECK(line < 0.99 * whole);
  const SweepRow row =
      simulate_point(screened(config), profile.gpu, profile.comm, profile.gpu.hbm_bytes);
  CHECK_FALSE(row.extrapolated);
  CHECK(row.step_time_s == whole);
}
