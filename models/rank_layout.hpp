// Ranks <-> parallel coordinates, and the process groups built from them, exactly as
// Megatron-LM's `RankGenerator` (megatron/core/parallel_state.py) builds them.
//
// The order (default "tp-cp-ep-dp-pp") lists the axes from the smallest stride to the largest:
// rank = Σ coord[axis]·stride[axis], stride[first axis] = 1, stride[next] = stride·size. A
// group over a set of axes (e.g. "dp-cp") holds the ranks that differ only along those axes;
// groups are listed by increasing index of the remaining axes, members by increasing index of
// the grouped axes (Megatron's `generate_masked_orthogonal_rank_groups`). Worked example:
// docs/reference/mechanics.md §6.1. The dense grid has ep = 1.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "models/parallel_spec.hpp"

namespace wallsim::models {

struct ParallelSizes {
  std::int64_t tp = 1, cp = 1, ep = 1, dp = 1, pp = 1;
  std::int64_t size(Axis axis) const;
  std::int64_t world() const { return tp * cp * ep * dp * pp; }
};

struct RankCoordinates {
  std::int64_t tp = 0, cp = 0, ep = 0, dp = 0, pp = 0;
  std::int64_t& at(Axis axis);
  std::int64_t at(Axis axis) const;
  bool operator==(const RankCoordinates&) const = default;
};

using RankGroups = std::vector<std::vector<std::int64_t>>;

class RankLayout {
 public:
  RankLayout(ParallelSizes sizes, AxisOrder order);

  const ParallelSizes& sizes() const { return sizes_; }
  std::int64_t world_size() const { return sizes_.world(); }
  std::int64_t stride(Axis axis) const;

  RankCoordinates coordinates(std::int64_t rank) const;
  std::int64_t rank(const RankCoordinates& coordinates) const;

  // All groups spanning `axes` (TP: {tp}; DP×CP: {dp, cp}; model parallel: {tp, pp}; ...).
  RankGroups groups(std::initializer_list<Axis> axes) const;

  // Megatron's embedding group: the first and last rank of every PP group (one rank if pp = 1).
  RankGroups embedding_groups() const;

 private:
  ParallelSizes sizes_;
  AxisOrder order_;
};

}  // namespace wallsim::models
