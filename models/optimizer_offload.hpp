// Megatron-Core's hybrid device optimizer (--optimizer-cpu-offload, training.offload.
// optimizer_fraction; megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py): the first
// `fraction` of the local optimizer shard's parameters (counted in elements) is updated on the
// CPU by PyTorch's torch.optim.AdamW, the rest on the GPU by the fused Adam kernel.
//
// Per step and offloaded parameter:
//   * the gradient is copied to pinned host memory (device to host, in the main gradient's dtype);
//   * AdamW runs on the CPU over fp32 tensors: decoupled weight decay, the two moments, the
//     denominator and the update, eight element-wise passes of PyTorch's single-tensor path (the
//     one it takes for CPU tensors) that stream 80 bytes per parameter through host DRAM
//     (mul_ 8, lerp_ 12, mul_ 8, addcmul_ 12, sqrt 8, div 8, add_ 8, addcdiv_ 16); the node's
//     GPUs step at once and share the CPUs' DRAM bandwidth (node.host_memory_GBps);
//   * the updated parameter is copied back (host to device, 2 bytes: PyTorch casts the fp32 value
//     to the bf16 parameter's dtype on the CPU before the copy).
// Host memory per offloaded parameter: fp32 master weight, gradient copy, exp_avg and exp_avg_sq
// (16 bytes); the GPU keeps none of its optimizer state.
//
// Without --overlap-cpu-optimizer-d2h-h2d the copies run on the compute stream: all gradients
// go out, then the CPU steps (while the GPU steps its own part), then all parameters come back.
// With it every parameter has a CPU optimizer of its own, the copies run on streams of their own
// and the three stages pipeline, one parameter each (models/step/data_parallel_ops.hpp).
// Sources and the bandwidth figures: docs/reference/optimizer_offload.md.
//
// Megatron-Core's chunked optimizer-state offload (--chunked-optimizer-state-offload, legacy
// spelling --offload-optimizer-states; training.offload.optimizer_states; megatron/core/
// optimizer/cpu_offloading/chunked_optimizer_state_offload.py) keeps the step on the GPU: the
// selected fraction of the shard's master weights and Adam moments lives in pinned host memory
// between steps. When the gradients are final the masters come back in one window and the
// moments chunk by chunk through two staging windows (host-to-device of chunk n + 1, the fused
// Adam step of chunk n and device-to-host of chunk n − 1 overlap), or all at once without a chunk
// size; the resident part steps first. At the optimizer-to-forward boundary the masters (and,
// without chunks, the moments) go back to the host on a copy stream while the next forward runs;
// wallsim, which simulates one step, ends the step with that copy (at NVLink-C2C's 450 GB/s,
// 13 ms for DeepSeek-V3's 5.8 GB of masters per GPU), so it counts it in full.
#pragma once

#include "models/optimizer_precision.hpp"

namespace wallsim::models {

inline constexpr double kCpuOptimizerHostBytesPerParam = 16;
inline constexpr double kCpuAdamBytesPerParam = 80;
inline constexpr double kCpuOptimizerParamCopyBytes = 2;

// Durations of the three stages for `params` offloaded parameters.
struct CpuOptimizerTimes {
  double gradients_to_host_s = 0;
  double cpu_step_s = 0;
  double params_to_device_s = 0;
};

// `grad_bytes`: bytes of one main gradient (4, or 2 in bf16); `host_link_Bps`: GPU↔host copy
// bandwidth per direction; `host_memory_Bps`: this GPU's share of the host DRAM bandwidth.
CpuOptimizerTimes cpu_optimizer_times(double params, double grad_bytes, double host_link_Bps,
                                      double host_memory_Bps);

// The chunked state offload's GPU windows at the step, for `params` offloaded parameters of the
// shard: the masters' whole window plus the moments, all of them (chunk_mb 0) or two chunks.
struct StateStaging {
  double master_bytes = 0;  // the masters' window
  double moment_bytes = 0;  // every offloaded moment
  double window_bytes = 0;  // the moments on the GPU at once
  double chunk_bytes = 0;   // one chunk (moment_bytes without chunks)
  double total() const { return master_bytes + window_bytes; }
};
StateStaging state_staging(const OptimizerPrecision& precision, double params, double chunk_mb);

}  // namespace wallsim::models
