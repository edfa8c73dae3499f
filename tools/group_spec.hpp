// Rank groups as users write them on the command line.
#pragma once

#include <string>
#include <vector>

namespace wallsim::cli {

// "0-7", "0,8,16,24", "0-3,8-11" -> ranks in the order written. InputError on bad syntax.
std::vector<int> parse_group(const std::string& text);

// The first `gpus_per_node` GPUs (0 = all) of each of `nodes` nodes.
std::vector<int> ranks_on_nodes(int nodes, int gpus_per_node, int cluster_gpus_per_node);

// GPUs to simulate: `requested` when given (must cover the group), else the whole nodes the
// group touches.
int topology_gpu_count(const std::vector<int>& ranks, int cluster_gpus_per_node, int requested);

}  // namespace wallsim::cli
