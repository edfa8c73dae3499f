// training.precision: the dtype a run's GEMMs compute in and how Transformer Engine quantizes
// their inputs (docs/reference/blackwell.md §8).
//
//   bf16   no quantization
//   fp8    per-tensor scaling (delayed or current: one FP32 scale per tensor), FP8 GEMMs
//   mxfp8  MXFP8 block scaling: one E8M0 scale per 32 consecutive elements, FP8 GEMMs on
//          Blackwell's block-scaled tensor cores
//   nvfp4  NVFP4: FP4 (E2M1) values in 16-element blocks, one E4M3 scale per block and one FP32
//          scale per tensor (two-level), FP4 GEMMs
//
// A block scale runs along a GEMM's contraction dimension, and the backward GEMMs contract a
// tensor over its other dimension, so the block-scaled recipes write a row-wise and a
// column-wise quantized copy of every GEMM input. Block-scaled GEMMs need compute capability
// 10.0 or later (Blackwell).
#pragma once

#include <optional>
#include <string_view>

#include "sim/hw/dtype.hpp"

namespace wallsim::models {

enum class Quantization { kNone, kFp8PerTensor, kMxfp8, kNvfp4 };

struct Precision {
  Dtype gemm_dtype = Dtype::kBf16;
  Quantization quantization = Quantization::kNone;
};

constexpr std::optional<Precision> precision_from_name(std::string_view name) {
  if (name == "bf16") return Precision{Dtype::kBf16, Quantization::kNone};
  if (name == "fp8") return Precision{Dtype::kFp8, Quantization::kFp8PerTensor};
  if (name == "mxfp8") return Precision{Dtype::kFp8, Quantization::kMxfp8};
  if (name == "nvfp4") return Precision{Dtype::kFp4, Quantization::kNvfp4};
  return std::nullopt;
}

constexpr std::string_view precision_name(Quantization quantization) {
  switch (quantization) {
    case Quantization::kNone:
      return "bf16";
    case Quantization::kFp8PerTensor:
      return "fp8";
    case Quantization::kMxfp8:
      return "mxfp8";
    case Quantization::kNvfp4:
      return "nvfp4";
  }
  return "unknown";
}

// Block-scaled recipes run only on Blackwell's block-scaled tensor cores (sm_100 and later).
constexpr int kBlockScaledMinComputeCapability = 100;

constexpr bool needs_block_scaled_tensor_cores(Quantization quantization) {
  return quantization == Quantization::kMxfp8 || quantization == Quantization::kNvfp4;
}

// HBM bytes the cast kernel moves per element of a bf16 GEMM input it quantizes.
//   fp8:   read 2, write one 1-byte copy                                   = 3
//   mxfp8: read 2, write row- and column-wise 1-byte copies, each with
//          one 1-byte E8M0 scale per 32 elements: 2 + 2·(1 + 1/32)         = 4.0625
//   nvfp4: read 2 for the per-tensor amax that sets the FP32 scale, then
//          read 2 and write row- and column-wise half-byte copies, each
//          with one 1-byte E4M3 scale per 16 elements: 4 + 2·(0.5 + 1/16)  = 5.125
constexpr double cast_bytes_per_element(Quantization quantization) {
  switch (quantization) {
    case Quantization::kNone:
      return 0.0;
    case Quantization::kFp8PerTensor:
      return 3.0;
    case Quantization::kMxfp8:
      return 2.0 + 2.0 * (1.0 + 1.0 / 32.0);
    case Quantization::kNvfp4:
      return 4.0 + 2.0 * (0.5 + 1.0 / 16.0);
  }
  return 0.0;
}

}  // namespace wallsim::models
