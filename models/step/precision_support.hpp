// Whether a run's training.precision can run on its GPU: the block-scaled recipes (mxfp8,
// nvfp4) need Blackwell's block-scaled tensor cores, and every precision needs the profile's peak
// for its GEMM dtype (fp8 is absent on A100, fp4 on Hopper).
#pragma once

#include <string>

#include "models/training_spec.hpp"
#include "sim/hw/gpu_profile.hpp"

namespace wallsim::models {

// InputError naming the config file, training.precision, the value and why the profile's GPU
// cannot run it; returns normally otherwise.
void check_precision_supported(const TrainingSpec& training, const GpuProfile& gpu,
                               const std::string& config_file);

}  // namespace wallsim::models
