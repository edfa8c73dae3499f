// Splitting a sweep over machines: shard i of N takes the points whose index ≡ i (mod N).
//
// Round-robin rather than contiguous blocks: neighbouring indices differ in the fastest knobs
// (overlap, recompute, micro-batch), so every shard gets a similar mix of cheap and expensive
// points. Shards are disjoint and together cover the space.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wallsim::models {

struct ShardSpec {
  std::int64_t index = 0;
  std::int64_t count = 1;
  bool operator==(const ShardSpec&) const = default;
};

// "i/N" with 0 <= i < N; throws InputError naming `option`.
ShardSpec parse_shard(const std::string& text, const std::string& option = "--shard");
std::string to_string(const ShardSpec& shard);

bool in_shard(std::int64_t point_index, const ShardSpec& shard);
// The indices of [0, space_size) that belong to `shard`, ascending.
std::vector<std::int64_t> shard_indices(std::int64_t space_size, const ShardSpec& shard);

}  // namespace wallsim::models
