#include "models/optimizer_offload.hpp"

namespace wallsim::models {

CpuOptimizerTimes cpu_optimizer_times(double params, double grad_bytes, double host_link_Bps,
                                      double host_memory_Bps) {
  CpuOptimizerTimes t;
  t.gradients_to_host_s = params * grad_bytes / host_link_Bps;
  t.cpu_step_s = params * kCpuAdamBytesPerParam / host_memory_Bps;
  t.params_to_device_s = params * kCpuOptimizerParamCopyBytes / host_link_Bps;
  return t;
}

}  // namespace wallsim::models
