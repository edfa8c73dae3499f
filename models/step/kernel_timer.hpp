// Kernel durations for the step builder: GpuModel's answer with all SMs and with the SMs a
// communication kernel leaves free, memoised by shape (a step repeats a few shapes thousands
// of times, and full fidelity repeats them per rank).
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "sim/core/time.hpp"
#include "sim/hw/gpu_model.hpp"

namespace wallsim::models {

struct KernelTime {
  Time alone;      // every SM available
  Time contended;  // profile().comm_kernel_sms held by a communication kernel
};

class KernelTimer {
 public:
  // `attention_kernel`: the fused kernel whose tables time attention (nullopt: the run's
  // attention is unfused, and attention() is never asked).
  KernelTimer(const GpuModel& gpu, std::optional<AttentionKernel> attention_kernel);

  KernelTime gemm(const GemmShape& shape, Dtype dtype);
  // `one_kernel`: a grouped GEMM kernel over the problems; otherwise one GEMM kernel per
  // problem, back to back, each paying its launch (Megatron without --moe-grouped-gemm).
  // Also its FLOPs, grouped_gemm_flops(shape), memoised alike.
  struct GroupedTime {
    KernelTime time;
    double flops = 0;
  };
  GroupedTime grouped_gemm(const GroupedGemmShape& shape, Dtype dtype, bool one_kernel);
  KernelTime attention(const AttentionShape& shape, bool backward);
  KernelTime memory_bound(double bytes);
  const GpuProfile& profile() const { return gpu_.profile(); }

 private:
  int sms_alone() const;
  int sms_contended() const;

  const GpuModel& gpu_;
  std::optional<AttentionKernel> attention_kernel_;
  using GemmKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int>;
  using AttentionKey = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                  std::int64_t, std::int64_t, bool, bool>;
  std::map<GemmKey, KernelTime> gemms_;
  // Problems as runs of equal shapes (the last field counts them): one entry under even routing.
  using ProblemRuns = std::vector<GemmKey>;
  static ProblemRuns problem_runs(const GroupedGemmShape& shape);
  using GroupedKey = std::tuple<ProblemRuns, int, bool>;
  std::map<GroupedKey, GroupedTime> grouped_;
  std::map<AttentionKey, KernelTime> attentions_;
  std::map<double, KernelTime> memory_;
};

}  // namespace wallsim::models
