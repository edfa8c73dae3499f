// GpuProfile: what wallsim knows about one GPU type, as data read from a calibration profile.
//
// The `gpu` section of calibration/profiles/<name>.json (see sim/hw/README.md for every key):
// peak dense FLOP/s per dtype, HBM size and bandwidth, the best GEMM throughput measured per
// dtype with a table of measured shapes or a size falloff, fused-attention throughput tables per
// kernel (cuDNN, FlashAttention-3, FlashAttention-2: whichever were measured), HBM efficiency by
// bytes moved, the per-kernel launch overhead and the SMs a communication kernel holds. Every
// number in a shipped profile carries its citation in the section's `sources` object.
#pragma once

#include <map>
#include <string>

#include "sim/core/time.hpp"
#include "sim/hw/attention_kernel.hpp"
#include "sim/hw/attention_tables.hpp"
#include "sim/hw/dtype.hpp"
#include "sim/hw/gemm_table.hpp"
#include "sim/hw/host_profile.hpp"
#include "sim/hw/log_curve.hpp"

namespace wallsim {

class JsonNode;

// Dense tensor-core throughput of one dtype.
struct DtypeCompute {
  double peak_flops;       // vendor dense peak, FLOP/s
  double gemm_best_flops;  // best GEMM throughput measured (best shape), FLOP/s; <= peak
};

struct GemmEfficiency {
  // Output tile of the GEMM kernels, for wave quantization (wave_quantization.hpp).
  int tile_m = 128;
  int tile_n = 256;
  // Measured throughput by shape (gemm_table.hpp), per dtype; a dtype listed here is timed by
  // its table.
  std::map<Dtype, GemmTable> measured;
  // A dtype without a table: relative efficiency (0, 1] against the GEMM's total FLOPs, applied
  // on top of the best-shape fraction (1 for large GEMMs, less for small ones). Empty when every
  // dtype has a table.
  LogCurve size_falloff;
  // Measured grouped kernels (one kernel over the experts of an MoE layer), per dtype, by the
  // shape of their mean problem: m = a problem's rows, n, and k (gemm_table.hpp). A dtype
  // listed here times grouped GEMMs by this table; otherwise by folding the problems into one
  // GEMM of `measured` (gpu_model.hpp). Optional.
  std::map<Dtype, GemmTable> grouped_measured;
  const GemmTable* table(Dtype dtype) const {
    const auto found = measured.find(dtype);
    return found == measured.end() ? nullptr : &found->second;
  }
  const GemmTable* grouped_table(Dtype dtype) const {
    const auto found = grouped_measured.find(dtype);
    return found == grouped_measured.end() ? nullptr : &found->second;
  }
};

struct GpuProfile {
  std::string name;         // e.g. "NVIDIA H100 SXM5 80GB"
  std::string source_file;  // the file it was read from, for error messages
  std::string json_path;    // the section's path in that file (e.g. "gpu")

  int sms = 0;
  int compute_capability = 0;  // major·10 + minor: 90 for sm_90 (Hopper), 80 for sm_80
  double hbm_bytes = 0;
  double hbm_bandwidth_Bps = 0;           // vendor peak
  std::map<Dtype, DtypeCompute> compute;  // dtypes the GPU's tensor cores support
  GemmEfficiency gemm;
  std::map<AttentionKernel, AttentionTables> attention;  // the kernels measured, at least one
  LogCurve hbm_efficiency;      // fraction of hbm_bandwidth_Bps by bytes moved
  Time kernel_launch_overhead;  // paid once by every kernel
  int comm_kernel_sms = 0;      // SMs a comm kernel holds beside a GEMM
  // The CPU thread that issues this GPU's work: the profile's top-level `host` section (read by
  // parse_profile, not parse_gpu_profile), carried here so that kernel timing sees it.
  HostProfile host;

  bool supports(Dtype dtype) const { return compute.count(dtype) != 0; }
  // Dense peak FLOP/s; InputError naming the profile when the GPU lacks the dtype
  // (e.g. fp8 on an A100).
  double peak_flops(Dtype dtype) const;
  // Best measured GEMM throughput over the dense peak, in (0, 1]; same error as peak_flops.
  double gemm_best_fraction(Dtype dtype) const;
  const DtypeCompute& compute_of(Dtype dtype) const;
  bool has_attention(AttentionKernel kernel) const { return attention.count(kernel) != 0; }
  // The tables of one kernel; InputError naming the profile and the kernels it has otherwise.
  const AttentionTables& attention_tables(AttentionKernel kernel) const;
  // "cudnn, flash3": the kernels this profile has tables for, in kAttentionKernels order.
  std::string attention_kernel_list() const;
};

// Reads the `gpu` section of a profile; InputError (file, JSON path, value, what is allowed)
// on missing, malformed or unknown keys.
GpuProfile parse_gpu_profile(const JsonNode& gpu_section);

}  // namespace wallsim
