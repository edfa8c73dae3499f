#include "models/optimizer_offload.hpp"

#include <algorithm>

namespace wallsim::models {

CpuOptimizerTimes cpu_optimizer_times(double params, double grad_bytes, double host_link_Bps,
                                      double host_memory_Bps) {
  CpuOptimizerTimes t;
  t.gradients_to_host_s = params * grad_bytes / host_link_Bps;
  t.cpu_step_s = params * kCpuAdamBytesPerParam / host_memory_Bps;
  t.params_to_device_s = params * kCpuOptimizerParamCopyBytes / host_link_Bps;
  return t;
}

StateStaging state_staging(const OptimizerPrecision& precision, double params, double chunk_mb) {
  StateStaging s;
  s.master_bytes = master_weight_bytes(precision) * params;
  s.moment_bytes =
      (optimizer_state_bytes_per_param(precision) - master_weight_bytes(precision)) * params;
  s.chunk_bytes = chunk_mb > 0 ? std::min(s.moment_bytes, chunk_mb * 1024 * 1024) : s.moment_bytes;
  s.window_bytes = std::min(s.moment_bytes, 2 * s.chunk_bytes);
  return s;
}

}  // namespace wallsim::models
