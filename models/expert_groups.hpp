// The process groups of the MoE grid (mechanics.md §4.1, §6.1).
//
// Megatron (ep_group_style "megatron"): the expert grid ETP × EP × EDP × PP is laid over the same
// world with the run's `order` (cp = 1 on it), so EP folds into the GPUs of the attention grid's
// TP × CP × DP instead of multiplying them; its PP groups equal the attention grid's.
// DeepSpeed-Megatron ("deepspeed"): without expert tensor parallelism (etp = 1) the EP groups
// are runs of ep consecutive ranks inside each pipeline stage and the expert-DP groups take the
// same position of every run; with etp > 1 each dense DP group (one TP rank, one stage) is cut
// into runs of ep and the expert-DP groups zip the runs together.
#pragma once

#include <cstdint>

#include "models/layout.hpp"
#include "models/rank_layout.hpp"

namespace wallsim::models {

struct ExpertGroups {
  RankGroups ep;     // all-to-all dispatch and combine
  RankGroups etp;    // expert tensor parallelism
  RankGroups edp;    // expert gradients reduce here
  RankGroups tp_ep;  // the allgather / flex dispatchers' group (ETP × EP)
};

ExpertGroups expert_groups(const Layout& layout);

}  // namespace wallsim::models
