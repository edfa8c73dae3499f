#include "models/rank_layout.hpp"

#include <algorithm>

namespace wallsim::models {
namespace {

bool contains(std::initializer_list<Axis> axes, Axis axis) {
  return std::find(axes.begin(), axes.end(), axis) != axes.end();
}

// Mixed-radix decomposition of `index` over `shape` (first entry varies fastest).
std::vector<std::int64_t> decompose(std::int64_t index, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> digits;
  for (std::int64_t size : shape) {
    digits.push_back(index % size);
    index /= size;
  }
  return digits;
}

std::int64_t dot(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

std::int64_t ParallelSizes::size(Axis axis) const {
  switch (axis) {
    case Axis::tp:
      return tp;
    case Axis::cp:
      return cp;
    case Axis::ep:
      return ep;
    case Axis::dp:
      return dp;
    case Axis::pp:
      return pp;
  }
  return 1;
}

std::int64_t& RankCoordinates::at(Axis axis) {
  switch (axis) {
    case Axis::tp:
      return tp;
    case Axis::cp:
      return cp;
    case Axis::ep:
      return ep;
    case Axis::dp:
      return dp;
    case Axis::pp:
      break;
  }
  return pp;
}

std::int64_t RankCoordinates::at(Axis axis) const {
  return const_cast<RankCoordinates&>(*this).at(axis);
}

RankLayout::RankLayout(ParallelSizes sizes, AxisOrder order) : sizes_(sizes), order_(order) {}

std::int64_t RankLayout::stride(Axis axis) const {
  std::int64_t stride = 1;
  for (Axis a : order_) {
    if (a == axis) break;
    stride *= sizes_.size(a);
  }
  return stride;
}

RankCoordinates RankLayout::coordinates(std::int64_t rank) const {
  RankCoordinates c;
  for (Axis axis : order_) {
    c.at(axis) = rank % sizes_.size(axis);
    rank /= sizes_.size(axis);
  }
  return c;
}

std::int64_t RankLayout::rank(const RankCoordinates& coordinates) const {
  std::int64_t rank = 0;
  for (Axis axis : order_) rank += coordinates.at(axis) * stride(axis);
  return rank;
}

RankGroups RankLayout::groups(std::initializer_list<Axis> axes) const {
  std::vector<std::int64_t> in_shape, in_stride, out_shape, out_stride;
  for (Axis axis : order_) {
    const bool grouped = contains(axes, axis);
    (grouped ? in_shape : out_shape).push_back(sizes_.size(axis));
    (grouped ? in_stride : out_stride).push_back(stride(axis));
  }
  std::int64_t group_size = 1;
  for (std::int64_t s : in_shape) group_size *= s;
  RankGroups groups;
  for (std::int64_t g = 0; g < world_size() / group_size; ++g) {
    const std::int64_t base = dot(decompose(g, out_shape), out_stride);
    std::vector<std::int64_t> members;
    for (std::int64_t r = 0; r < group_size; ++r) {
      members.push_back(base + dot(decompose(r, in_shape), in_stride));
    }
    groups.push_back(std::move(members));
  }
  return groups;
}

RankGroups RankLayout::embedding_groups() const {
  RankGroups result;
  for (const auto& pipeline : groups({Axis::pp})) {
    if (pipeline.size() == 1) {
      result.push_back(pipeline);
    } else {
      result.push_back({pipeline.front(), pipeline.back()});
    }
  }
  return result;
}

}  // namespace wallsim::models
