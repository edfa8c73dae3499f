// The fused attention kernels a profile can carry tables for.
//
// Each is a kernel family measured on its own (kernels.md B1): cuDNN's fused attention (what
// Transformer Engine calls FusedAttention, F16_arbitrary_seqlen), FlashAttention-3 and
// FlashAttention-2. Which one a run uses is a framework choice made in models/.
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace wallsim {

enum class AttentionKernel { kCudnn, kFlash2, kFlash3 };

inline constexpr std::array<AttentionKernel, 3> kAttentionKernels{
    AttentionKernel::kCudnn, AttentionKernel::kFlash2, AttentionKernel::kFlash3};

// The name used in profiles and configs: "cudnn", "flash2", "flash3".
constexpr std::string_view attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kCudnn:
      return "cudnn";
    case AttentionKernel::kFlash2:
      return "flash2";
    case AttentionKernel::kFlash3:
      return "flash3";
  }
  return "unknown";
}

// The inverse of attention_kernel_name; nullopt for any other spelling.
constexpr std::optional<AttentionKernel> attention_kernel_from_name(std::string_view name) {
  for (AttentionKernel kernel : kAttentionKernels) {
    if (attention_kernel_name(kernel) == name) return kernel;
  }
  return std::nullopt;
}

}  // namespace wallsim
