// Simulating one training step end to end: build the per-rank programs, replay them on the
// engine with communication timed by a network model, and summarize.
#pragma once

#include <cstdint>
#include <functional>

#include "calibration/profile.hpp"
#include "models/run_config.hpp"
#include "models/step/step_program.hpp"
#include "sim/graph/replay.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/network/collective/comm_profile.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim::models {

struct SimulationResult {
  RunSummary summary;
  StepProgram program;
  ReplayResult replay;
};

// The run's calibration profile: inline in the config, the file it names, or the shipped profile
// of the cluster's GPU. Throws InputError when it cannot be read.
Profile run_profile(const RunConfig& config);

// Throws InputError for configs the simulator cannot express, ReplayStuck when the step cannot
// finish. With an active `variability` section the step is sample `sample` of the run (the
// same sample always replays the same step).
SimulationResult simulate(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                          std::uint64_t sample = 0);

// The same with the run's own calibration profile (run_profile).
SimulationResult simulate(const RunConfig& config);

// `samples` seeded steps of a run with variability, `jobs` at a time (the result does not depend
// on `jobs`): the median sample simulated in full, its summary carrying the distribution of all.
// `progress` is called after each sample with the number done (from the worker threads, one
// call at a time). The step program is built once and shared by every replay.
SimulationResult simulate_samples(const RunConfig& config, const GpuProfile& gpu,
                                  const CommProfile& comm, int samples, int jobs,
                                  const std::function<void(int)>& progress = {});

}  // namespace wallsim::models
