#include "sim/hw/gpu_model.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "sim/hw/wave_quantization.hpp"

namespace wallsim {
namespace {

void check_gemm_shape(const GemmShape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0 || s.batch < 0) {
    throw std::invalid_argument("GEMM dimensions must be >= 0");
  }
}

void check_attention_shape(const AttentionShape& s) {
  if (s.batch < 0 || s.heads < 0 || s.kv_heads < 0 || s.seq_q < 0 || s.seq_kv < 0 ||
      s.head_dim < 0) {
    throw std::invalid_argument("attention dimensions must be >= 0");
  }
}

}  // namespace

GpuModel::GpuModel(GpuProfile profile) : profile_(std::move(profile)) {}

void GpuModel::check_sms(int sms_available) const {
  if (sms_available < 1 || sms_available > profile_.sms) {
    throw std::invalid_argument("sms_available = " + std::to_string(sms_available) +
                                " is outside [1, " + std::to_string(profile_.sms) + "]");
  }
}

double GpuModel::achieved_hbm_Bps(double bytes) const {
  return profile_.hbm_bandwidth_Bps * profile_.hbm_efficiency.at(bytes);
}

double GpuModel::falloff_compute_s(const GemmShape& shape, Dtype dtype, int sms_available) const {
  const DtypeCompute& compute = profile_.compute_of(dtype);
  const std::int64_t tiles =
      gemm_tile_count(shape.m, shape.n, shape.batch, profile_.gemm.tile_m, profile_.gemm.tile_n);
  // The SMs a comm kernel holds are lost to every wave, and the partial last wave is counted
  // over the SMs that remain.
  const double sm_share = static_cast<double>(sms_available) / profile_.sms;
  const double rate = compute.gemm_best_flops * profile_.gemm.size_falloff.at(gemm_flops(shape)) *
                      wave_efficiency(tiles, sms_available) * sm_share;
  return gemm_flops(shape) / rate;
}

double GpuModel::gemm_compute_s(const GemmShape& shape, Dtype dtype, int sms_available) const {
  check_gemm_shape(shape);
  check_sms(sms_available);
  const DtypeCompute& compute = profile_.compute_of(dtype);
  const GemmTable* table = profile_.gemm.table(dtype);
  if (table == nullptr) return falloff_compute_s(shape, dtype, sms_available);
  const double rows = static_cast<double>(shape.m) * static_cast<double>(shape.batch);
  const double n = static_cast<double>(shape.n), k = static_cast<double>(shape.k);
  // The measurements ran on every SM and carry their own waves; losing SMs to a comm kernel
  // slows every wave alike.
  double t = table->compute_s(rows, n, k) * profile_.sms / sms_available;
  if (table->waves_unmeasured(rows, n)) {
    const std::int64_t tiles =
        gemm_tile_count(shape.m, shape.n, shape.batch, profile_.gemm.tile_m, profile_.gemm.tile_n);
    t = std::max(t, wave_floor_s(tiles, shape.k, profile_.gemm.tile_m, profile_.gemm.tile_n,
                                 sms_available, profile_.sms, compute.gemm_best_flops));
  }
  return t;
}

double GpuModel::gemm_compute_flops_per_s(const GemmShape& shape, Dtype dtype,
                                          int sms_available) const {
  const double compute_s = gemm_compute_s(shape, dtype, sms_available);
  return compute_s > 0 ? gemm_flops(shape) / compute_s : 0.0;
}

Time GpuModel::gemm_time(double flops, double bytes, double compute_s) const {
  // A GEMM with an empty dimension returns at once: nothing to read or write.
  if (!(flops > 0)) return profile_.kernel_launch_overhead;
  const double memory_s = bytes / achieved_hbm_Bps(bytes);
  return profile_.kernel_launch_overhead + Time::from_seconds(std::max(compute_s, memory_s));
}

Time GpuModel::gemm(const GemmShape& shape, Dtype dtype, int sms_available) const {
  const double compute_s = gemm_compute_s(shape, dtype, sms_available);
  return gemm_time(gemm_flops(shape), gemm_bytes(shape, dtype), compute_s);
}

Time GpuModel::grouped_gemm(const GroupedGemmShape& shape, Dtype dtype, int sms_available) const {
  for (const GemmShape& problem : shape.problems) check_gemm_shape(problem);
  const double flops = grouped_gemm_flops(shape);
  double compute_s = 0;
  if (const GemmTable* grouped = profile_.gemm.grouped_table(dtype)) {
    // The grouped kernel measured at its mean problem; like the dense tables, the measurement
    // ran on every SM.
    check_sms(sms_available);
    const MeanGroupedProblem mean = mean_grouped_problem(shape);
    if (mean.problems > 0) {
      compute_s =
          flops / grouped->flops_per_s(mean.m, mean.n, mean.k) * profile_.sms / sms_available;
    }
  } else {
    const GemmShape folded = fold_grouped_gemm(shape, profile_.gemm.tile_m);
    compute_s = gemm_compute_s(folded, dtype, sms_available);
  }
  return gemm_time(flops, grouped_gemm_bytes(shape, dtype), compute_s);
}

Time GpuModel::attention(AttentionKernel kernel, AttentionPass pass, const AttentionShape& shape,
                         double flops, int sms_available) const {
  check_attention_shape(shape);
  check_sms(sms_available);
  const AttentionTables& tables = profile_.attention_tables(kernel);
  if (!(flops > 0)) return profile_.kernel_launch_overhead;
  // The tables index by the key length: it is the length of each thread block's inner loop,
  // which is what amortizes the block's prologue and epilogue.
  const double table_flops = tables.achieved_flops(
      pass, shape.causal, static_cast<double>(shape.head_dim), static_cast<double>(shape.seq_kv));
  const double sm_share = static_cast<double>(sms_available) / profile_.sms;
  return profile_.kernel_launch_overhead + Time::from_seconds(flops / (table_flops * sm_share));
}

Time GpuModel::attention_forward(const AttentionShape& shape, AttentionKernel kernel,
                                 int sms_available) const {
  return attention(kernel, AttentionPass::kForward, shape, attention_forward_flops(shape),
                   sms_available);
}

Time GpuModel::attention_backward(const AttentionShape& shape, AttentionKernel kernel,
                                  int sms_available) const {
  return attention(kernel, AttentionPass::kBackward, shape, attention_backward_flops(shape),
                   sms_available);
}

Time GpuModel::memory_bound(double bytes, int sms_available) const {
  check_sms(sms_available);
  if (bytes < 0) throw std::invalid_argument("memory_bound bytes must be >= 0");
  if (bytes == 0) return profile_.kernel_launch_overhead;
  return profile_.kernel_launch_overhead + Time::from_seconds(bytes / achieved_hbm_Bps(bytes));
}

}  // namespace wallsim
