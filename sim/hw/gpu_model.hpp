// GpuModel: how long a GEMM, a flash-attention call or a memory-bound kernel runs on one GPU.
//
// Every kernel pays the profile's launch overhead, then:
//   GEMM        max(compute time, bytes / (HBM bandwidth · hbm_efficiency(bytes))); compute time
//               with a measured table for the dtype (gemm_table.hpp, rows = m·batch):
//                 table(rows, n, k) · sms / sms_available, and where rows or n lie beyond the
//                 table (it says nothing of waves there; GemmTable::waves_unmeasured) at least
//                 wave_floor_s(tiles, k, sms_available) (wave_quantization.hpp)
//               without one: FLOPs / (peak · best_fraction · size_falloff(FLOPs)
//                                     · wave_efficiency(tiles, sms_available) · sms_available/sms)
//   grouped     one kernel over several problems: with a measured grouped table for the dtype,
//   GEMM        FLOPs / table FLOP/s(mean problem: rows per problem, n, rows-weighted k)
//               · sms / sms_available; without one, the compute time of the single GEMM
//               fold_grouped_gemm gives (grouped_gemm.hpp); the bytes of all problems
//   attention   FLOPs / (table FLOP/s(kernel, pass, causal, head_dim, seq_kv)
//                       · sms_available / sms)
//   memory      bytes / (HBM bandwidth · hbm_efficiency(bytes)), whatever sms_available is
// `sms_available` is the number of SMs the kernel may use: all of them (profile().sms) when it
// runs alone, fewer when a communication kernel holds some (profile().comm_kernel_sms).
// Compute-bound kernels slow in proportion to the SMs they lose; memory-bound kernels keep
// their bandwidth, because a few SMs already saturate HBM. sim/hw/README.md derives each term.
#pragma once

#include "sim/core/time.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/hw/grouped_gemm.hpp"
#include "sim/hw/kernel_flops.hpp"

namespace wallsim {

class GpuModel {
 public:
  explicit GpuModel(GpuProfile profile);

  const GpuProfile& profile() const { return profile_; }

  // InputError when the profile lacks `dtype`; std::invalid_argument when a dimension is
  // negative or sms_available is outside [1, profile().sms].
  Time gemm(const GemmShape& shape, Dtype dtype, int sms_available) const;
  // One grouped kernel over `shape.problems` (all of the same n); same errors as gemm.
  Time grouped_gemm(const GroupedGemmShape& shape, Dtype dtype, int sms_available) const;
  // Fused attention by the tables of `kernel`, in bf16, the precision they were measured in;
  // InputError when the profile has no tables for `kernel`.
  Time attention_forward(const AttentionShape& shape, AttentionKernel kernel,
                         int sms_available) const;
  Time attention_backward(const AttentionShape& shape, AttentionKernel kernel,
                          int sms_available) const;
  // A kernel that streams `bytes` through HBM (reads plus writes).
  Time memory_bound(double bytes, int sms_available) const;

  // The rates behind the durations, for reports and tests.
  // FLOP/s a GEMM of this shape sustains while compute-bound.
  double gemm_compute_flops_per_s(const GemmShape& shape, Dtype dtype, int sms_available) const;
  // Seconds a GEMM of this shape computes, before the HBM floor and the launch overhead.
  double gemm_compute_s(const GemmShape& shape, Dtype dtype, int sms_available) const;
  // HBM bandwidth a kernel moving `bytes` sustains.
  double achieved_hbm_Bps(double bytes) const;

 private:
  Time attention(AttentionKernel kernel, AttentionPass pass, const AttentionShape& shape,
                 double flops, int sms_available) const;
  void check_sms(int sms_available) const;
  double falloff_compute_s(const GemmShape& shape, Dtype dtype, int sms_available) const;
  Time gemm_time(double flops, double bytes, double compute_s) const;

  GpuProfile profile_;
};

}  // namespace wallsim
