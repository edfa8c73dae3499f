// Running a sweep on one machine: screen every point of a shard (layout rules, then memory),
// then simulate the survivors on `jobs` threads.
//
// Workers take point positions from one atomic counter and store each result at its position,
// so the report (rows sorted by step time, ties by id) is the same whatever `jobs` is and
// whichever thread finished first. Each models::simulate call owns its engine, graphs and
// network model; the profiles are shared read-only.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

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

struct SweepRunOptions {
  int jobs = 1;
  // Sampled steps per point (> 1 needs the base config's `variability`), replayed on the
  // point's own thread, and what the rows are ranked by.
  int samples = 1;
  SweepObjective objective = SweepObjective::step;
  ShardSpec shard;
  // Rows simulated by an earlier, interrupted run (--resume); their points are not simulated
  // again.
  std::vector<SweepRow> already_done;
  // Called once screening is over with the number of points to simulate (including
  // already_done ones).
  std::function<void(const SweepCounts&)> on_screened;
  // Called after each newly simulated point, one call at a time (under a lock); `done`
  // counts already_done rows too.
  std::function<void(const SweepRow&, std::int64_t done, std::int64_t total)> on_row;
};

// Identifies a sweep: the base config, the space, the samples per point and the objective (not
// the shard or the job count).
std::string sweep_fingerprint(const SweepBase& base, const SweepSpace& space, int samples = 1,
                              SweepObjective objective = SweepObjective::step);

// Notes every sweep report carries (what the space leaves out and why).
std::vector<std::string> sweep_notes(const SweepSpace& space);

SweepReport run_sweep(const SweepBase& base, const SweepSpace& space, const SweepHardware& hw,
                      const SweepRunOptions& options);

// Runs body(i) for i in [0, count) on `jobs` threads pulling i from one atomic counter. The
// first exception a body throws is rethrown after all threads stop.
void parallel_for(std::int64_t count, int jobs, const std::function<void(std::int64_t)>& body);

}  // namespace wallsim::models
