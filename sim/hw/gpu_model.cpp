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

double GpuModel::gemm_compute_flops_per_s(const GemmShape& shape, Dtype dtype,
                                          int sms_available) const {
  check_sms(sms_available);
  const DtypeCompute& compute = profile_.compute_of(dtype);
  const std::int64_t tiles =
      gemm_tile_count(shape.m, shape.n, shape.batch, profile_.gemm.tile_m, profile_.gemm.tile_n);
  // The SMs a comm kernel holds are lost to every wave, and the partial last wave is counted
  // over the SMs that remain.
  const double sm_share = static_cast<double>(sms_available) / profile_.sms;
  return compute.gemm_best_flops * profile_.gemm.size_falloff.at(gemm_flops(shape)) *
         wave_efficiency(tiles, sms_available) * sm_share;
}

Time GpuModel::gemm(const GemmShape& shape, Dtype dtype, int sms_available) const {
  check_gemm_shape(shape);
  const double rate = gemm_compute_flops_per_s(shape, dtype, sms_available);
  const double flops = gemm_flops(shape);
  // A GEMM with an empty dimension returns at once: nothing to read or write.
  if (!(flops > 0)) return profile_.kernel_launch_overhead;
  const double bytes = gemm_bytes(shape, dtype);
  const double compute_s = flops / rate;
  const double memory_s = bytes / achieved_hbm_Bps(bytes);
  return profile_.kernel_launch_overhead + Time::from_seconds(std::max(compute_s, memory_s));
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
