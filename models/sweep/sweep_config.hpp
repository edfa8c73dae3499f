// Turning a sweep point into the run config that reproduces it.
//
// The base document is the user's run config with `model` and `cluster` loaded inline (so a
// point's config runs from anywhere), a named `calibration` file resolved to an absolute path,
// every `--set` applied and `num_gpus` set. A point's config is that document with the point's
// `parallel` sizes and `training` switches written in; `wallsim run` on it simulates exactly
// what the sweep simulated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/run_config.hpp"
#include "models/sweep/sweep_space.hpp"

namespace wallsim::models {

struct SweepBase {
  nlohmann::json document;
  std::string file;  // the run config as named (for messages)
  RunConfig parsed;  // the base parsed with a trivial layout (tp = pp = cp = 1 on one GPU)
  std::int64_t num_gpus = 0;
};

// Loads `path`, applies `overrides` (`--set`), sets num_gpus (0 keeps the config's) and checks
// everything that does not depend on the layout. Throws InputError.
SweepBase load_sweep_base(const std::string& path, const std::vector<std::string>& overrides,
                          std::int64_t num_gpus);

// The `path=value` overrides that turn the base into one point (models/run_config.hpp's one
// way to vary a config): its parallel sizes and training switches, dp and an uneven first/last
// stage removed (they follow from the sizes), and a description naming the point.
std::vector<std::string> point_overrides(const SweepBase& base, const SweepPoint& point);

// The run config document of one point: the base document with the point's overrides, as the
// sweep writes it.
nlohmann::json point_config(const SweepBase& base, const SweepPoint& point);

// The point's run config, read and validated by the run config loader.
RunConfig point_run_config(const SweepBase& base, const SweepPoint& point);

}  // namespace wallsim::models
