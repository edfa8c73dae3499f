// The placement knob: the job's whole-node share of each NVLink domain, swept like any other.
#include <sstream>

#include <catch2/catch.hpp>

#include "calibration/profile.hpp"
#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_runner.hpp"
#include "models/sweep/sweep_space.hpp"
#include "models/sweep/sweep_writers.hpp"

using namespace wallsim;
using namespace wallsim::models;

TEST_CASE("expert groups kept inside NVL72 racks by --vary placement run faster", "[sweep]") {
  // Qwen3-30B-A3B on 256 GB200 (racks of 72 GPUs, trays of 4), tp 1, pp 1, one micro-batch of
  // 512 tokens per GPU, EP 32 over consecutive ranks. Packed into racks of 72, the group of
  // ranks 64–95 spans two racks and its token exchanges take the network; on 64 GPUs of each
  // rack every group stays on NVLink, so that point's step is shorter.
  const SweepBase base = load_sweep_base(
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/qwen3-30b-a3b-8gpu.json",
      {"cluster=\"configs/clusters/gb200-nvl72.json\"", "training.global_batch=256",
       "training.recompute=\"none\""},
      256);
  const Profile profile = load_profile(shipped_profile_path(base.parsed.cluster.gpu));
  SweepSpace space;
  space.ep = {32};
  space.recompute = {Recompute::none};
  apply_vary(space, "placement=72,64");
  const SweepReport report =
      run_sweep(base, space, {profile.gpu, profile.comm, profile.gpu.hbm_bytes}, {});
  REQUIRE(report.rows.size() == 2);
  REQUIRE(report.rows[0].error.empty());
  REQUIRE(report.rows[1].error.empty());
  // Rows sort by step time: the rack-local share first.
  CHECK(report.rows[0].point.placement == 64);
  CHECK(report.rows[1].point.placement == 72);
  CHECK(report.rows[0].id.ends_with("-place64"));
  CHECK(report.rows[0].step_time_s < report.rows[1].step_time_s);

  std::ostringstream csv;
  write_sweep_csv(report, csv);
  CHECK(csv.str().find(",placement\n") != std::string::npos);
  CHECK(csv.str().find(",64\n") != std::string::npos);
  // Rows keep their placement through the journal a resumed sweep reads.
  const SweepRow back = row_from_json(row_to_json(report.rows[0]), "journal");
  CHECK(back.point == report.rows[0].point);
}

TEST_CASE("a sweep over several NVL72 racks at one placement says which share to try", "[sweep]") {
  // Racks of 72 GPUs in trays of 4: the largest power-of-two share of whole trays is 64, which
  // holds groups of 32 and 64 whole; a sweep that already varies the placement, or that fits in
  // one rack, or that runs on 8-GPU nodes, gets no note.
  const auto notes_of = [](const std::vector<std::string>& overrides, std::int64_t gpus,
                           const std::string& vary) {
    const SweepBase base = load_sweep_base(
        std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/qwen3-30b-a3b-8gpu.json", overrides,
        gpus);
    const Profile profile = load_profile(shipped_profile_path(base.parsed.cluster.gpu));
    SweepSpace space;
    space.ep = {8};
    space.recompute = {Recompute::none};
    if (!vary.empty()) apply_vary(space, vary);
    std::string notes;
    for (const auto& note :
         run_sweep(base, space, {profile.gpu, profile.comm, profile.gpu.hbm_bytes}, {}).notes) {
      notes += note + "\n";
    }
    return notes;
  };
  const std::vector<std::string> rack = {"cluster=\"configs/clusters/gb200-nvl72.json\"",
                                         "training.global_batch=256"};
  CHECK_THAT(notes_of(rack, 256, ""), Catch::Contains("--vary placement=72,64"));
  CHECK_THAT(notes_of(rack, 256, ""), Catch::Contains("groups of 32 or 64 ranks"));
  CHECK(notes_of(rack, 256, "placement=72,64").find("--vary placement") == std::string::npos);
  CHECK(notes_of(rack, 64, "").find("--vary placement") == std::string::npos);
  CHECK(notes_of({"training.global_batch=256"}, 256, "").find("--vary placement") ==
        std::string::npos);
}
