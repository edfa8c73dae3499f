// Synthetic raw benchmark files: what the benches would record on a GPU that behaves exactly
// like a given profile, plus seeded multiplicative noise. Used to test that the fits recover
// known parameters, and to ship labelled example data for a project without a GPU. These are
// NEVER measurements: every file says so in `tool` and `notes`.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "calibration/profile.hpp"
#include "calibration/raw/raw_data.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim {

inline constexpr const char* kSyntheticTool = "wallsim synthetic (not a measurement)";

// A reproducible normal generator: std::mt19937_64 (fully specified by the standard) feeding
// Box-Muller, so the same seed gives the same numbers with every standard library (unlike
// std::normal_distribution, whose algorithm is unspecified).
class SeededNoise {
 public:
  explicit SeededNoise(std::uint64_t seed);
  double standard_normal();
  // time · (1 + relative_sigma · z), z clamped to ±3 so no time turns negative.
  double perturb(double time_s, double relative_sigma);

 private:
  double uniform_open();  // in (0, 1)

  std::mt19937_64 engine_;
};

struct SyntheticOptions {
  std::uint64_t seed = 1;
  double relative_noise = 0.02;  // sigma of the multiplicative noise
  std::string date = "1970-01-01";
  int max_nodes = 4;  // collective sweeps on 1, 2 and up to this many nodes
};

// Four files (gemm, attention, memory, collective) of points predicted by `profile` on
// `cluster` through GpuModel and the analytical network model, each time perturbed.
std::vector<RawFile> synthesize_raw_files(const Profile& profile, const ClusterSpec& cluster,
                                          const SyntheticOptions& options);

}  // namespace wallsim
