#include "models/sweep/sweep_shard.hpp"

#include <optional>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

std::optional<std::int64_t> parse_count(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

ShardSpec parse_shard(const std::string& text, const std::string& option) {
  const auto slash = text.find('/');
  const auto index = parse_count(text.substr(0, slash));
  const auto count =
      slash == std::string::npos ? std::nullopt : parse_count(text.substr(slash + 1));
  if (!index || !count || *count < 1 || *index >= *count) {
    throw InputError("command line", option, text,
                     "must be i/N with 0 <= i < N (e.g. 3/16; with Slurm: "
                     "$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT)");
  }
  return {*index, *count};
}

std::string to_string(const ShardSpec& shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

bool in_shard(std::int64_t point_index, const ShardSpec& shard) {
  return point_index % shard.count == shard.index;
}

std::vector<std::int64_t> shard_indices(std::int64_t space_size, const ShardSpec& shard) {
  std::vector<std::int64_t> indices;
  for (std::int64_t i = shard.index; i < space_size; i += shard.count) indices.push_back(i);
  return indices;
}

}  // namespace wallsim::models
