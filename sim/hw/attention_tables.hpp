// Measured flash-attention throughput, by pass, mask, head dim and sequence length.
//
// Each table is one benchmark panel: achieved FLOP/s (FlashAttention's FLOP convention, see
// kernel_flops.hpp) against sequence length, for one head dim, one pass and causal or not.
// A lookup interpolates in log2(seq_len) within a table and in log2(head_dim) between the
// two tables of neighbouring head dims; outside the measured range it reads the nearest
// measurement (no extrapolation).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/hw/log_curve.hpp"

namespace wallsim {

enum class AttentionPass { kForward, kBackward };

constexpr std::string_view attention_pass_name(AttentionPass pass) {
  return pass == AttentionPass::kForward ? "forward" : "backward";
}

struct AttentionTable {
  AttentionPass pass;
  bool causal;
  double head_dim;
  LogCurve achieved_flops_by_seq;  // FLOP/s against sequence length
};

class AttentionTables {
 public:
  AttentionTables() = default;
  // `kernel` names what was measured (e.g. "FlashAttention-3"). Needs at least one table for
  // each (pass, causal) pair and no two tables with the same (pass, causal, head_dim);
  // std::invalid_argument otherwise (the profile parser reports these with JSON paths first).
  AttentionTables(std::string kernel, std::vector<AttentionTable> tables);

  const std::string& kernel() const { return kernel_; }
  const std::vector<AttentionTable>& tables() const { return tables_; }

  // Achieved FLOP/s of the whole GPU for this pass, mask, head dim and sequence length.
  double achieved_flops(AttentionPass pass, bool causal, double head_dim, double seq_len) const;

 private:
  // Tables of one (pass, causal) pair, sorted by head dim.
  std::vector<const AttentionTable*> matching(AttentionPass pass, bool causal) const;

  std::string kernel_;
  std::vector<AttentionTable> tables_;
};

}  // namespace wallsim
