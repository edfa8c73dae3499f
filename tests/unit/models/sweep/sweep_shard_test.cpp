#include <set>

#include <catch2/catch.hpp>

#include "models/sweep/sweep_shard.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;

TEST_CASE("shards are disjoint and together cover the space", "[sweep]") {
  for (std::int64_t size : {0, 1, 7, 100, 2016}) {
    for (std::int64_t count : {1, 2, 3, 7, 16, 150}) {
      std::multiset<std::int64_t> seen;
      for (std::int64_t i = 0; i < count; ++i) {
        for (std::int64_t index : shard_indices(size, {i, count})) {
          CHECK(in_shard(index, {i, count}));
          seen.insert(index);
        }
      }
      REQUIRE(static_cast<std::int64_t>(seen.size()) == size);  // no point twice
      for (std::int64_t index = 0; index < size; ++index) CHECK(seen.count(index) == 1);
    }
  }
}

TEST_CASE("shard sizes differ by at most one point", "[sweep]") {
  // 2016 points over 5 shards: 2016 = 5·403 + 1, so one shard gets 404 and four get 403.
  std::vector<std::size_t> sizes;
  for (std::int64_t i = 0; i < 5; ++i) sizes.push_back(shard_indices(2016, {i, 5}).size());
  CHECK(sizes == std::vector<std::size_t>{404, 403, 403, 403, 403});
}

TEST_CASE("a shard is given as i/N with 0 <= i < N", "[sweep]") {
  CHECK(parse_shard("3/16") == ShardSpec{3, 16});
  CHECK(to_string(parse_shard("0/1")) == "0/1");
  for (const char* bad : {"16/16", "3", "a/4", "-1/4", "1/0", "1/", "/4"}) {
    CHECK_THROWS_AS(parse_shard(bad), InputError);
  }
}
