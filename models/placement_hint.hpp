// A hint for runs on NVLink domains larger than a node (an NVL72 rack): when a tensor-parallel,
// context-parallel or expert group leaves its domain, so that its traffic takes the network,
// although giving the job a smaller whole-node share of each domain (placement.gpus_per_domain,
// as a scheduler places a job on 16 of a rack's 18 trays) would keep every such group inside
// one domain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/layout.hpp"

namespace wallsim::models {

// Whether `ranks` (global ranks, placed in order `per_domain` to a domain) lie in more than one
// NVLink domain, so that traffic among them takes the network.
bool leaves_domain(const std::vector<std::int64_t>& ranks, std::int64_t per_domain);

// The note, or "" when every group already stays in one domain, when domains are single nodes,
// or when no share of whole nodes smaller than the domain keeps every group inside one (and for
// worlds of more than 2^20 GPUs, whose groups are not listed).
// `gpus_per_domain` is the run's domain (after any placement), `gpus_per_node` the node's GPUs.
std::string placement_hint(const Layout& layout, int gpus_per_domain, int gpus_per_node);

}  // namespace wallsim::models
