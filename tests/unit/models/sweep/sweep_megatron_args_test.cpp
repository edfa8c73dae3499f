#include <catch2/catch.hpp>

#include "calibration/profile.hpp"
#include "models/launch_args/megatron_import.hpp"
#include "models/run_config.hpp"
#include "models/sweep/sweep_runner.hpp"
#include "models/sweep/sweep_space.hpp"

using namespace wallsim;
using namespace wallsim::models;

TEST_CASE("every ranked sweep row carries Megatron arguments that import back to its layout",
          "[sweep]") {
  const SweepBase base =
      load_sweep_base(std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/llama3-8b-8gpu.json",
                      {"simulation.network=analytical", "training.global_batch=16"}, 8);
  const Profile profile = load_profile(shipped_profile_path(base.parsed.cluster.gpu));
  SweepSpace space;
  space.tp = {1, 2, 4};
  space.pp = {1, 2};
  space.micro_batch = {1, 2};
  space.recompute = {Recompute::selective, Recompute::full};
  const SweepReport report =
      run_sweep(base, space, {profile.gpu, profile.comm, profile.gpu.hbm_bytes}, {});
  REQUIRE(report.rows.size() >= 12);
  MegatronImportOptions options;
  options.num_gpus = 8;
  for (const SweepRow& row : report.rows) {
    INFO(row.id << ": " << row.megatron_args);
    const RunConfig back = run_config_from_json(
        import_megatron_args(row.megatron_args, row.id, options).config, row.id);
    CHECK(back.parallel.tp == row.point.tp);
    CHECK(back.parallel.pp == row.point.pp);
    CHECK(back.parallel.vpp == row.point.vpp);
    CHECK(back.training.micro_batch == row.point.micro_batch);
    CHECK(back.training.recompute == row.point.recompute);
    CHECK(back.training.distributed_optimizer == row.point.distributed_optimizer);
    CHECK(back.training.overlap.dp_grad_reduce == row.point.overlap);
    CHECK(back.layout.sizes.dp == row.dp);
    CHECK(back.layout.num_microbatches == row.num_microbatches);
  }
}

TEST_CASE("sweep rows of schedules Megatron-LM does not have carry no Megatron arguments",
          "[sweep]") {
  const SweepBase base = load_sweep_base(
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/llama3-8b-8gpu-zbv.json",
      {"simulation.network=analytical"}, 8);
  const Profile profile = load_profile(shipped_profile_path(base.parsed.cluster.gpu));
  SweepSpace space;
  space.tp = {2};
  space.pp = {4};
  space.vpp = {2};
  space.micro_batch = {1};
  space.recompute = {Recompute::selective};
  apply_vary(space, "schedule=megatron,zbv,dualpipe");
  const SweepReport report =
      run_sweep(base, space, {profile.gpu, profile.comm, profile.gpu.hbm_bytes}, {});
  REQUIRE(report.rows.size() == 3);
  for (const SweepRow& row : report.rows) {
    INFO(row.id);
    // "megatron" at vpp 2 is Megatron's interleaved 1F1B; the others are not Megatron's.
    CHECK(row.megatron_args.empty() == (effective_schedule(row.point) != "interleaved"));
  }
}
