// Running a sweep on one machine: screen every point of a shard (layout rules, memory, then
// recompute dominance), then simulate the survivors on `jobs` threads, and after them the next
// heavier recompute of any layout whose lighter one did not fit after all.
//
// Workers take point positions from one atomic counter and store each result at its position,
// so the report (rows sorted by step time, ties by id) is the same whatever `jobs` is and
// whichever thread finished first. Each models::simulate call owns its engine, graphs and
// network model; the profiles are shared read-only. A footprint gate bounds the memory of the
// points that run at the same time (SweepRunOptions::simulation_memory_bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/run_config.hpp"
#include "models/sweep/sweep_config.hpp"
#include "models/sweep/sweep_report.hpp"
#include "models/sweep/sweep_shard.hpp"
#include "models/sweep/sweep_space.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim::models {

struct SweepHardware {
  const GpuProfile& gpu;
  const CommProfile& comm;
  double hbm_bytes = 0;
};

// The simulator's own memory for one point, estimated for scheduling: about 10 KiB per layer
// pass (one micro-batch through one layer on one simulated rank: its forward and backward ops,
// their dependencies and the replay's tables). Measured: Qwen3-235B-A22B at tp4 pp64 ep4, 512
// micro-batches through 94 layers (48,128 passes, 3.0 M ops), peaks at 489 MiB.
inline constexpr double kFootprintBytesPerLayerPass = 10.0 * 1024;

// Estimated peak bytes simulating this point takes (kFootprintBytesPerLayerPass per pass), with
// `microbatches` micro-batches per step instead of the config's when it is given (> 0).
double simulation_footprint(const RunConfig& config, std::int64_t microbatches = 0);

struct SweepRunOptions {
  int jobs = 1;
  // Points whose estimated footprints (simulation_footprint) together exceed this do not run
  // at the same time; a larger point runs alone, and the pages it freed are returned to the
  // system when it ends. Scheduling only: the report is the same whatever the budget.
  double simulation_memory_bytes = 640.0 * 1024 * 1024;
  // Sampled steps per point (> 1 needs the base config's `variability`), replayed on the
  // point's own thread, and what the rows are ranked by.
  int samples = 1;
  SweepObjective objective = SweepObjective::step;
  // Simulate every recompute of a layout, also those a lighter recompute that fits makes slower
  // for nothing (sweep_evaluate.hpp); off, they are pruned.
  bool all_recompute = false;
  // Simulate every micro-batch of long 1F1B steps; off, they are extrapolated from the steps of
  // pp + 1 and pp + 2 micro-batches (steady_state_microbatches in sweep_evaluate.hpp).
  bool all_microbatches = false;
  ShardSpec shard;
  // Rows simulated by an earlier, interrupted run (--resume); their points are not simulated
  // again.
  std::vector<SweepRow> already_done;
  // Called once screening is over with the number of points to simulate (including
  // already_done ones).
  std::function<void(const SweepCounts&)> on_screened;
  // Called after each newly simulated point, one call at a time (under a lock); `done`
  // counts already_done rows too. `work_done` is the share (0–1) of the estimated cost of the
  // points this run simulates that is done (simulation_footprint weighs each point: a point's
  // cost grows with its layer passes, from under 0.1 s to seconds within one MoE space, so
  // counting points mispredicts what is left); already_done rows are not part of it.
  std::function<void(const SweepRow&, std::int64_t done, std::int64_t total, double work_done)>
      on_row;
};

// Seconds left when `work_done` (0–1) of the work took `elapsed_s`, at the rate so far; 0
// before any work is done.
double remaining_seconds(double elapsed_s, double work_done);

// Identifies a sweep: the base config, the space, the samples per point, the objective and
// whether every recompute and every micro-batch is simulated (not the shard or the job count).
std::string sweep_fingerprint(const SweepBase& base, const SweepSpace& space, int samples = 1,
                              SweepObjective objective = SweepObjective::step,
                              bool all_recompute = false, bool all_microbatches = false);

// Notes every sweep report carries (what the space leaves out and why).
std::vector<std::string> sweep_notes(const SweepSpace& space);

SweepReport run_sweep(const SweepBase& base, const SweepSpace& space, const SweepHardware& hw,
                      const SweepRunOptions& options);

}  // namespace wallsim::models
