#include "models/step/kernel_timer.hpp"

#include <algorithm>
#include <stdexcept>

namespace wallsim::models {

KernelTimer::KernelTimer(const GpuModel& gpu, std::optional<AttentionKernel> attention_kernel)
    : gpu_(gpu), attention_kernel_(attention_kernel) {}

int KernelTimer::sms_alone() const {
  return gpu_.profile().sms;
}

// A communication kernel never leaves a compute kernel without SMs, whatever the profile says.
int KernelTimer::sms_contended() const {
  return std::max(1, gpu_.profile().sms - gpu_.profile().comm_kernel_sms);
}

KernelTime KernelTimer::gemm(const GemmShape& shape, Dtype dtype) {
  const GemmKey key{shape.m, shape.n, shape.k, shape.batch, static_cast<int>(dtype)};
  auto found = gemms_.find(key);
  if (found != gemms_.end()) return found->second;
  const KernelTime time{gpu_.gemm(shape, dtype, sms_alone()),
                        gpu_.gemm(shape, dtype, sms_contended())};
  return gemms_.emplace(key, time).first->second;
}

KernelTimer::ProblemRuns KernelTimer::problem_runs(const GroupedGemmShape& shape) {
  ProblemRuns runs;
  for (const GemmShape& p : shape.problems) {
    if (!runs.empty()) {
      auto& [m, n, k, batch, count] = runs.back();
      if (m == p.m && n == p.n && k == p.k && batch == p.batch) {
        ++count;
        continue;
      }
    }
    runs.emplace_back(p.m, p.n, p.k, p.batch, 1);
  }
  return runs;
}

KernelTimer::GroupedTime KernelTimer::grouped_gemm(const GroupedGemmShape& shape, Dtype dtype,
                                                   bool one_kernel) {
  GroupedKey key{problem_runs(shape), static_cast<int>(dtype), one_kernel};
  auto found = grouped_.find(key);
  if (found != grouped_.end()) return found->second;
  KernelTime time{Time::zero(), Time::zero()};
  if (one_kernel) {
    time = {gpu_.grouped_gemm(shape, dtype, sms_alone()),
            gpu_.grouped_gemm(shape, dtype, sms_contended())};
  } else {
    for (const GemmShape& p : shape.problems) {
      const KernelTime one = gemm(p, dtype);
      time.alone += one.alone;
      time.contended += one.contended;
    }
  }
  return grouped_.emplace(std::move(key), GroupedTime{time, grouped_gemm_flops(shape)})
      .first->second;
}

KernelTime KernelTimer::attention(const AttentionShape& shape, bool backward) {
  const AttentionKey key{shape.batch,  shape.heads,    shape.kv_heads, shape.seq_q,
                         shape.seq_kv, shape.head_dim, shape.causal,   backward};
  auto found = attentions_.find(key);
  if (found != attentions_.end()) return found->second;
  if (!attention_kernel_) throw std::logic_error("fused attention timed in an unfused run");
  const AttentionKernel kernel = *attention_kernel_;
  const auto run = [&](int sms) {
    return backward ? gpu_.attention_backward(shape, kernel, sms)
                    : gpu_.attention_forward(shape, kernel, sms);
  };
  const KernelTime time{run(sms_alone()), run(sms_contended())};
  return attentions_.emplace(key, time).first->second;
}

KernelTime KernelTimer::memory_bound(double bytes) {
  auto found = memory_.find(bytes);
  if (found != memory_.end()) return found->second;
  const KernelTime time{gpu_.memory_bound(bytes, sms_alone()),
                        gpu_.memory_bound(bytes, sms_contended())};
  return memory_.emplace(bytes, time).first->second;
}

}  // namespace wallsim::models
