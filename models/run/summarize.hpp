// Turning a replayed step into a RunSummary: throughput, MFU, memory per stage (analytical and
// simulated), the time split of the critical rank and the three walls.
#pragma once

#include "models/flops.hpp"
#include "models/run_config.hpp"
#include "models/step/step_program.hpp"
#include "sim/graph/replay.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/report/run_summary.hpp"
#include "sim/report/walls.hpp"

namespace wallsim::models {

RunSummary summarize(const RunConfig& config, const GpuProfile& gpu, const StepProgram& program,
                     const ReplayResult& replay);

// Sets the step's throughput from its iteration_time_s, num_gpus and peak_flops_per_gpu and the
// iteration's FLOPs: tokens and FLOPs per iteration, tokens/s and model TFLOP/s per GPU, MFU.
void set_throughput(RunSummary& summary, const IterationFlops& flops);

// The step's walls from its time split, the compute time beyond ideal by kind and its memory
// (the stage with the largest analytical peak).
Walls summary_walls(const RunSummary& summary, const ComputeExcess& excess);

// "tp8 sp cp1 pp4 vpp5 dp32 mb1" for reports.
std::string describe_layout(const RunConfig& config);

}  // namespace wallsim::models
