// Simulating one training step end to end: build the per-rank programs, replay them on the
// engine with communication timed by a network model, and summarize.
#pragma once

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
// finish.
SimulationResult simulate(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm);

// The same with the run's own calibration profile (run_profile).
SimulationResult simulate(const RunConfig& config);

}  // namespace wallsim::models
