// What an op is, for attributing a step's time: the compute kinds and the communication
// groups of the walls (sim/report/README.md). Builders store it in Op::category.
//
// One table (kOpCategories) lists every category with its name and whether it is compute or
// communication; the emitters, the time attribution and every writer read it, and the arrays
// indexed by category, compute kind or communication group are sized from it.
#pragma once

#include <array>
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
  kOffload,      // activation copies between GPU and host memory
};

struct OpCategoryInfo {
  OpCategory category;
  const char* name;    // in summary.json, timeline.json and traces
  bool communication;  // a communication group (exposed time), else a compute kind
  int slot;            // index among the compute kinds, or among the communication groups
};

// Compute kinds first, then communication groups, each in the order the outputs list them.
inline constexpr std::array<OpCategoryInfo, 10> kOpCategories{{
    {OpCategory::kGemm, "gemm", false, 0},
    {OpCategory::kAttention, "attention", false, 1},
    {OpCategory::kElementwise, "elementwise", false, 2},
    {OpCategory::kOptimizer, "optimizer", false, 3},
    {OpCategory::kTp, "tp", true, 0},
    {OpCategory::kCp, "cp", true, 1},
    {OpCategory::kEp, "ep", true, 2},
    {OpCategory::kDp, "dp", true, 3},
    {OpCategory::kPp, "pp", true, 4},
    {OpCategory::kOffload, "offload", true, 5},
}};
inline constexpr int kOpCategoryCount = static_cast<int>(kOpCategories.size());

constexpr int count_categories(bool communication) {
  int count = 0;
  for (const auto& info : kOpCategories) count += info.communication == communication ? 1 : 0;
  return count;
}
inline constexpr int kComputeKindCount = count_categories(false);
inline constexpr int kCommGroupCount = count_categories(true);

constexpr const OpCategoryInfo& category_info(OpCategory category) {
  return kOpCategories[static_cast<std::size_t>(category)];
}

constexpr bool is_communication(OpCategory category) {
  return category_info(category).communication;
}

constexpr const char* category_name(OpCategory category) {
  return category_info(category).name;
}

constexpr std::uint16_t category_code(OpCategory category) {
  return static_cast<std::uint16_t>(category);
}

// The index of a communication group (tp 0 … pp 4) or a compute kind (gemm 0 … optimizer 3).
constexpr int category_slot(OpCategory category) {
  return category_info(category).slot;
}

// The category in `slot` among the communication groups (or the compute kinds).
constexpr OpCategory category_at_slot(bool communication, int slot) {
  for (const auto& info : kOpCategories) {
    if (info.communication == communication && info.slot == slot) return info.category;
  }
  return OpCategory::kGemm;
}

// The table lists categories in enum order and numbers each class's slots from 0.
static_assert([] {
  int next[2] = {0, 0};
  for (std::size_t i = 0; i < kOpCategories.size(); ++i) {
    const auto& info = kOpCategories[i];
    if (static_cast<std::size_t>(info.category) != i) return false;
    if (info.slot != next[info.communication ? 1 : 0]++) return false;
  }
  return true;
}());

}  // namespace wallsim
