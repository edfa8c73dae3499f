// Element types of GPU kernels.
//
// A Dtype names the precision a kernel computes in; it sets the tensor-core peak a GEMM is
// measured against and the bytes each element occupies in HBM.
#pragma once

#include <optional>
#include <string_view>

namespace wallsim {

enum class Dtype { kBf16, kFp8, kFp4, kFp32 };

// The name used in profiles and configs: "bf16", "fp8", "fp4", "fp32".
constexpr std::string_view dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp8:
      return "fp8";
    case Dtype::kFp4:
      return "fp4";
    case Dtype::kFp32:
      return "fp32";
  }
  return "unknown";
}

// The inverse of dtype_name; nullopt for any other spelling.
constexpr std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (Dtype dtype : {Dtype::kBf16, Dtype::kFp8, Dtype::kFp4, Dtype::kFp32}) {
    if (dtype_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

// Bytes per element (fp8 is e4m3/e5m2: one byte either way; fp4 is e2m1: half a byte). Block
// scales are not counted here: the cast kernels that write them are (models/step/quantization.hpp).
constexpr double dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBf16:
      return 2.0;
    case Dtype::kFp8:
      return 1.0;
    case Dtype::kFp4:
      return 0.5;
    case Dtype::kFp32:
      return 4.0;
  }
  return 0.0;
}

}  // namespace wallsim
