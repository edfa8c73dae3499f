#include "tools/group_spec.hpp"

#include <algorithm>
#include <charconv>

#include "sim/core/input_error.hpp"

namespace wallsim::cli {
namespace {

constexpr const char* kGroupSyntax = "expected ranks such as 0-7, 0,8,16,24 or 0-3,8-11";

int parse_rank(const std::string& text, const std::string& whole) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) {
    throw InputError("command line", "--group", whole, kGroupSyntax);
  }
  return value;
}

}  // namespace

std::vector<int> parse_group(const std::string& text) {
  std::vector<int> ranks;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? comma : comma - start);
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      ranks.push_back(parse_rank(item, text));
    } else {
      const int first = parse_rank(item.substr(0, dash), text);
      const int last = parse_rank(item.substr(dash + 1), text);
      if (last < first) throw InputError("command line", "--group", text, kGroupSyntax);
      for (int rank = first; rank <= last; ++rank) ranks.push_back(rank);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ranks;
}

std::vector<int> ranks_on_nodes(int nodes, int gpus_per_node, int cluster_gpus_per_node) {
  const int per_node = gpus_per_node == 0 ? cluster_gpus_per_node : gpus_per_node;
  if (per_node > cluster_gpus_per_node) {
    throw InputError(
        "command line", "--gpus-per-node", std::to_string(per_node),
        "exceeds the cluster's " + std::to_string(cluster_gpus_per_node) + " GPUs per node");
  }
  std::vector<int> ranks;
  for (int node = 0; node < nodes; ++node) {
    for (int local = 0; local < per_node; ++local) {
      ranks.push_back(node * cluster_gpus_per_node + local);
    }
  }
  return ranks;
}

int topology_gpu_count(const std::vector<int>& ranks, int cluster_gpus_per_node, int requested) {
  const int highest = *std::max_element(ranks.begin(), ranks.end());
  if (requested > 0) {
    if (highest >= requested) {
      throw InputError(
          "command line", "--group", std::to_string(highest),
          "rank outside the cluster (valid: 0.." + std::to_string(requested - 1) + ")");
    }
    return requested;
  }
  const int nodes = highest / cluster_gpus_per_node + 1;
  return nodes == 1 ? std::max(highest + 1, 2) : nodes * cluster_gpus_per_node;
}

}  // namespace wallsim::cli
