// The run config's `variability` section: what makes one training step differ from the next
// and one GPU from another (README.md "Variability"). Absent, every step is the deterministic
// one; present, `wallsim run --samples N` replays N seeded steps and reports their spread.
//
// Every draw is a pure function of (seed, sample, what is drawn), so a sample replays the
// same whichever thread runs it and in whatever order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/report/op_category.hpp"

namespace wallsim {
class JsonNode;
}

namespace wallsim::models {

// One GPU, or every GPU of one node, running its kernels `slowdown` times slower.
struct Straggler {
  std::optional<std::int64_t> rank;  // a global rank, or
  std::optional<std::int64_t> node;  // every GPU of node `node` (rank / gpus_per_node)
  double slowdown = 1;
};

// A link running at `bandwidth_factor` of its capacity: a NIC's cable (both directions) or a
// GPU's NVLink to its switch (both directions; one of 18 NVLinks down is 17/18).
struct DegradedLink {
  std::optional<std::int64_t> nic_node, nic_rail;  // {"nic": {"node", "rail"}}
  std::optional<std::int64_t> nvlink_rank;         // {"nvlink": {"rank"}}
  double bandwidth_factor = 1;
};

struct VariabilitySpec {
  // Defaults, each derived in README.md "Variability" from the cited source:
  // the spread of per-GPU speed within one cluster (Sinha et al., SC'22, arXiv:2208.11035: 8%
  // average variation across the GPUs of a cluster, about 7 standard deviations for a few
  // thousand GPUs), and the step-to-step speed noise of one GPU that reproduces the median p10-p90
  // spread (1.44%) of the 14 single-node Llama 3.1 8B MLPerf rows of
  // docs/reference/variability.md as the slowest of 8 data-parallel ranks (1.55 standard
  // deviations between the 10th and 90th percentiles of the maximum of 8 normal draws).
  static constexpr double kDefaultGpuCv = 0.01;
  static constexpr double kDefaultStepCv = 0.0093;

  bool enabled = false;  // the section is present
  std::uint64_t seed = 0;
  // Per-kernel duration noise (lognormal, mean 1) by compute kind (op_category.hpp's slots).
  std::array<double, kComputeKindCount> kernel_cv{};
  double gpu_cv = 0;   // persistent per-GPU speed factor (lognormal, mean 1; same every sample)
  double step_cv = 0;  // per-GPU speed factor drawn anew for every sample (lognormal, mean 1)
  // Each collective and transfer lasts 1 + collective_jitter * |z| times its network time
  // (z standard normal): interference only ever slows communication.
  double collective_jitter = 0;
  std::vector<Straggler> stragglers;
  std::vector<DegradedLink> degraded_links;
  // NICs out of service, {node, rail}: their traffic moves to another rail (Topology::lose_nic).
  std::vector<std::pair<std::int64_t, std::int64_t>> lost_nics;

  // Any random draw (samples then differ).
  bool random() const;
  // Anything that changes a step from the deterministic one (noise, stragglers, links).
  bool active() const {
    return random() || !stragglers.empty() || !degraded_links.empty() || !lost_nics.empty();
  }
};

// Parses the section; `num_gpus`, `gpus_per_node` and `nics_per_node` bound the ranks, nodes
// and rails it names.
VariabilitySpec parse_variability_spec(const JsonNode& node, std::int64_t num_gpus,
                                       int gpus_per_node, int nics_per_node);

}  // namespace wallsim::models
