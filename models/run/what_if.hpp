// What-ifs around a run: how the step time moves when one machine parameter changes by ±10%
// (each answer re-simulates the step; no formula), and, for a layout that does not fit in
// memory, which single change would make it fit (analytical peak, memory.hpp: fast).
#pragma once

#include <string>
#include <vector>

#include "models/run_config.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/network/collective/comm_profile.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim::models {

// Scales by `factor` the NVLink bandwidth ("nvlink_bandwidth"), the NIC line rate
// ("ib_bandwidth"), the best GEMM throughput of every dtype ("gemm_efficiency", capped at the
// dense peak: the reported factor is what the training precision got), the HBM bandwidth
// ("hbm_bandwidth") or the host's cost per issue ("host_issue_cost", eager and graph alike), and
// re-simulates: the network rates as a variant of the config (variant_of), the GPU's and the
// host's on a copy of the profile.
Sensitivity sensitivity(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                        const std::string& parameter, double factor, double baseline_step_s);

// The four hardware parameters at ×1.1 and ×0.9, in that order; then the host's issue cost
// ×0.5, and the next CUDA-graph scope (none → per_layer, per_layer → full_iteration; left out
// when already full_iteration or when the config refuses it). The re-simulations run `jobs` at
// a time (each on its own thread); the answers do not depend on it.
std::vector<Sensitivity> sensitivities(const RunConfig& config, const GpuProfile& gpu,
                                       const CommProfile& comm, double baseline_step_s,
                                       int jobs = 1);

// Candidates, each alone: recompute selective, recompute full, distributed optimizer, micro-batch
// halved, pp ×2, tp ×2 (within an NVLink domain); the memory-saving training switches together;
// then gradient and parameter sharding (ZeRO-2, ZeRO-3), bf16 gradient reduction, the
// precision-aware optimizer with bf16 moments, activation offloading, for MoE and MLA models
// Megatron-Core's fine-grained recompute (mla_up_proj, moe_act and layernorm beside the modules
// already recomputed; the MCore MoE report's Table 4), and FP8 (its quantized activation copies)
// for a bf16 run on a GPU with FP8 GEMMs (compute capability 8.9 or later).
// Only those that change something are listed; each with its analytical peak and whether it
// fits in `hbm_bytes` less the fit margin (memory.hpp; `compute_capability` sizes the cuBLAS
// workspaces). Each candidate is a variant of the config (variant_of: overrides read and
// validated by the config loader); one the loader refuses is listed as not valid.
std::vector<FitCandidate> fit_suggestions(const RunConfig& config, double hbm_bytes,
                                          int compute_capability = 90);

// What each change that fits costs in time: re-simulates the variant of every valid candidate
// that fits (variant_of with its overrides, the same profile) and records its step and its change
// against `baseline_step_s`. A variant the simulator refuses stays untimed, its reason in `note`.
// `jobs` variants are simulated at a time; the answers do not depend on it.
void time_fit_suggestions(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                          double baseline_step_s, std::vector<FitCandidate>& candidates,
                          int jobs = 1);

}  // namespace wallsim::models
