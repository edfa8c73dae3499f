// What an op is, for attributing a step's time: the compute kinds and the communication
// groups of DESIGN.md's walls. Builders store it in Op::category.
#pragma once

#include <cstdint>

namespace wallsim {

enum class OpCategory : std::uint16_t {
  kGemm,         // matrix multiplies (forward, data-gradient, weight-gradient)
  kAttention,    // flash-attention forward / backward
  kElementwise,  // memory-bound kernels: norms, activations, residuals, dropout, casts, loss
  kOptimizer,    // the optimizer step
  kTp,           // tensor-parallel communication
  kCp,           // context-parallel communication
  kEp,           // expert-parallel communication
  kDp,           // data-parallel gradient reduction and parameter gathering
  kPp,           // pipeline send/receive
};
inline constexpr int kOpCategoryCount = 9;

constexpr bool is_communication(OpCategory category) {
  return category >= OpCategory::kTp;
}

constexpr const char* category_name(OpCategory category) {
  constexpr const char* kNames[kOpCategoryCount] = {
      "gemm", "attention", "elementwise", "optimizer", "tp", "cp", "ep", "dp", "pp"};
  return kNames[static_cast<int>(category)];
}

constexpr std::uint16_t category_code(OpCategory category) {
  return static_cast<std::uint16_t>(category);
}

}  // namespace wallsim
