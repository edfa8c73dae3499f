#include "models/rank_layout.hpp"

#include <catch2/catch.hpp>

using wallsim::models::Axis;
using wallsim::models::AxisOrder;
using wallsim::models::ParallelSizes;
using wallsim::models::RankGroups;
using wallsim::models::RankLayout;

namespace {

const AxisOrder kMegatronOrder{Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};

// mechanics.md §6.1: world 16, t = 2, c = 2, d = 2, p = 2, produced by Megatron's RankGenerator.
RankLayout worked_example() {
  return RankLayout(ParallelSizes{2, 2, 1, 2, 2}, kMegatronOrder);
}

RankGroups first(const RankGroups& groups, std::size_t count) {
  return RankGroups(groups.begin(), groups.begin() + static_cast<long>(count));
}

}  // namespace

TEST_CASE("TP, CP, DP, DPxCP and PP groups match Megatron's worked example (mechanics.md 6.1)",
          "[models][layout]") {
  const RankLayout layout = worked_example();
  CHECK(first(layout.groups({Axis::tp}), 2) == RankGroups{{0, 1}, {2, 3}});
  CHECK(first(layout.groups({Axis::cp}), 3) == RankGroups{{0, 2}, {1, 3}, {4, 6}});
  CHECK(first(layout.groups({Axis::dp}), 5) == RankGroups{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}});
  CHECK(first(layout.groups({Axis::dp, Axis::cp}), 3) ==
        RankGroups{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}});
  CHECK(first(layout.groups({Axis::pp}), 2) == RankGroups{{0, 8}, {1, 9}});
}

TEST_CASE("every group kind partitions the world into world/size groups", "[models][layout]") {
  const RankLayout layout = worked_example();
  for (auto axes : {layout.groups({Axis::tp}), layout.groups({Axis::cp}), layout.groups({Axis::dp}),
                    layout.groups({Axis::pp}), layout.groups({Axis::dp, Axis::cp}),
                    layout.groups({Axis::tp, Axis::pp})}) {
    std::vector<int> seen(16, 0);
    for (const auto& group : axes) {
      for (auto rank : group) ++seen[static_cast<std::size_t>(rank)];
    }
    CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  }
}

TEST_CASE("expert grids fold EP onto the same ranks as Megatron's (mechanics.md 6.1)",
          "[models][layout]") {
  // t_e = 1, e = 4, EDP = 2: EP [0,1,2,3], [4,5,6,7]; EDP [0,4], [1,5].
  const RankLayout wide(ParallelSizes{1, 1, 4, 2, 2}, kMegatronOrder);
  CHECK(first(wide.groups({Axis::ep}), 2) == RankGroups{{0, 1, 2, 3}, {4, 5, 6, 7}});
  CHECK(first(wide.groups({Axis::dp}), 2) == RankGroups{{0, 4}, {1, 5}});
  // t_e = 2, e = 2: ETP [0,1]; EP [0,2], [1,3], [4,6]; EDP [0,4].
  const RankLayout split(ParallelSizes{2, 1, 2, 2, 2}, kMegatronOrder);
  CHECK(first(split.groups({Axis::tp}), 1) == RankGroups{{0, 1}});
  CHECK(first(split.groups({Axis::ep}), 3) == RankGroups{{0, 2}, {1, 3}, {4, 6}});
  CHECK(first(split.groups({Axis::dp}), 1) == RankGroups{{0, 4}});
}

TEST_CASE("coordinates and ranks are inverse, tp varying fastest", "[models][layout]") {
  const RankLayout layout = worked_example();
  // 13 = 1·1 (tp) + 0·2 (cp) + 1·4 (dp) + 1·8 (pp)
  const auto c = layout.coordinates(13);
  CHECK(c.tp == 1);
  CHECK(c.cp == 0);
  CHECK(c.dp == 1);
  CHECK(c.pp == 1);
  for (std::int64_t rank = 0; rank < layout.world_size(); ++rank) {
    CHECK(layout.rank(layout.coordinates(rank)) == rank);
  }
}

TEST_CASE("another order moves the strides: tp-pp-dp puts pp next to tp", "[models][layout]") {
  const RankLayout layout(ParallelSizes{2, 1, 1, 2, 2},
                          AxisOrder{Axis::tp, Axis::pp, Axis::cp, Axis::ep, Axis::dp});
  CHECK(first(layout.groups({Axis::pp}), 2) == RankGroups{{0, 2}, {1, 3}});
  CHECK(first(layout.groups({Axis::dp}), 1) == RankGroups{{0, 4}});
}

TEST_CASE("the embedding group is the first and last rank of each pipeline", "[models][layout]") {
  const RankLayout four_stages(ParallelSizes{2, 1, 1, 1, 4}, kMegatronOrder);
  CHECK(four_stages.embedding_groups() == RankGroups{{0, 6}, {1, 7}});
  const RankLayout one_stage(ParallelSizes{2, 1, 1, 2, 1}, kMegatronOrder);
  CHECK(one_stage.embedding_groups() == RankGroups{{0}, {1}, {2}, {3}});
}
