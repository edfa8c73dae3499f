// Turning a replayed step into a RunSummary: throughput, MFU, memory per stage (analytical and
// simulated), the time split of the critical rank and the three walls.
#pragma once

#include "models/run_config.hpp"
#include "models/step/step_program.hpp"
#include "sim/graph/replay.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim::models {

RunSummary summarize(const RunConfig& config, const GpuProfile& gpu, const StepProgram& program,
                     const ReplayResult& replay);

// "tp8 sp cp1 pp4 vpp5 dp32 mb1" for reports.
std::string describe_layout(const RunConfig& config);

}  // namespace wallsim::models
