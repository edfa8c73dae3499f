// training.attention_backend: the core-attention implementation a run's layers use.
//
// cudnn, flash2 and flash3 are fused kernels timed by the profile's tables of that kernel
// (sim/hw/attention_kernel.hpp); unfused is Megatron's core attention of two batched GEMMs and
// a softmax over the stored s² scores (what training.flash_attention false has always meant).
// Without the key a run gets what Transformer Engine picks on its GPU
// (models/step/attention_backend_choice.hpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/hw/attention_kernel.hpp"

namespace wallsim::models {

enum class AttentionBackend { kCudnn, kFlash2, kFlash3, kUnfused };

constexpr std::string_view attention_backend_name(AttentionBackend backend) {
  switch (backend) {
    case AttentionBackend::kCudnn:
      return "cudnn";
    case AttentionBackend::kFlash2:
      return "flash2";
    case AttentionBackend::kFlash3:
      return "flash3";
    case AttentionBackend::kUnfused:
      return "unfused";
  }
  return "unknown";
}

inline std::vector<std::string> attention_backend_names() {
  return {"cudnn", "flash2", "flash3", "unfused"};
}

constexpr std::optional<AttentionBackend> attention_backend_from_name(std::string_view name) {
  for (AttentionBackend backend : {AttentionBackend::kCudnn, AttentionBackend::kFlash2,
                                   AttentionBackend::kFlash3, AttentionBackend::kUnfused}) {
    if (attention_backend_name(backend) == name) return backend;
  }
  return std::nullopt;
}

// The fused kernel whose tables time the backend; nullopt for unfused.
constexpr std::optional<AttentionKernel> fused_kernel(AttentionBackend backend) {
  switch (backend) {
    case AttentionBackend::kCudnn:
      return AttentionKernel::kCudnn;
    case AttentionBackend::kFlash2:
      return AttentionKernel::kFlash2;
    case AttentionBackend::kFlash3:
      return AttentionKernel::kFlash3;
    case AttentionBackend::kUnfused:
      break;
  }
  return std::nullopt;
}

}  // namespace wallsim::models
