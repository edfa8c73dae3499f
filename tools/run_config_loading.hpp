// What `wallsim flops`, `wallsim memory` (and later `run`) share: the CONFIG argument, `--set`
// overrides, `--json`, loading the run config and finding the GPU's HBM capacity.
#pragma once

#include <string>
#include <vector>

#include "calibration/profile.hpp"
#include "models/run_config.hpp"

namespace CLI {
class App;
}

namespace wallsim::cli {

struct ConfigCommandOptions {
  std::string config;
  std::vector<std::string> overrides;
  bool json = false;
};

void add_config_options(CLI::App& command, ConfigCommandOptions& options);

// CONFIG is a path (working directory, then the data root) or a shipped example's name.
std::string resolve_config_path(const std::string& reference);
models::RunConfig load_config(const ConfigCommandOptions& options);

// HBM bytes of one GPU from the run's calibration profile (the cluster GPU's shipped profile
// unless the config names one).
double hbm_bytes(const models::RunConfig& config);

// Notes go to stderr as warnings (stdout stays one JSON document with --json).
void log_notes(const std::vector<std::string>& notes);

}  // namespace wallsim::cli
