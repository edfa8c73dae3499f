#include "models/step/precision_support.hpp"

#include "sim/core/input_error.hpp"

namespace wallsim::models {

void check_precision_supported(const TrainingSpec& training, const GpuProfile& gpu,
                               const std::string& config_file) {
  const std::string name(precision_name(training.quantization));
  const std::string where = " (" + gpu.name + ", compute capability " +
                            std::to_string(gpu.compute_capability / 10) + "." +
                            std::to_string(gpu.compute_capability % 10) + ")";
  if (needs_block_scaled_tensor_cores(training.quantization) &&
      gpu.compute_capability < kBlockScaledMinComputeCapability) {
    throw InputError(config_file, "training.precision", name,
                     "needs block-scaled tensor cores (Blackwell, compute capability 10.0 or "
                     "later), which the calibration profile's GPU lacks" +
                         where + "; use bf16 or fp8");
  }
  if (!gpu.supports(training.precision)) {
    throw InputError(config_file, "training.precision", name,
                     "needs " + std::string(dtype_name(training.precision)) +
                         " tensor cores, which the calibration profile's GPU lacks" + where +
                         " (its profile has no peak_tflops." +
                         std::string(dtype_name(training.precision)) + ")");
  }
}

}  // namespace wallsim::models
