// What `wallsim flops`, `wallsim memory` (and later `run`) share: the CONFIG argument, `--set`
// overrides, `--json`, loading the run config and finding the GPU's HBM capacity.
#pragma once

#include <string>
#include <vector>

#include "calibration/profile.hpp"
#include "models/launch_args/megatron_import.hpp"
#include "models/run_config.hpp"

namespace CLI {
class App;
}

namespace wallsim::cli {

// What `import megatron` and `--megatron-args` take besides the arguments file.
struct MegatronArgsOptions {
  std::string cluster = "dgx-h100";
  std::int64_t num_gpus = 0;  // 0: from torchrun's --nproc_per_node x --nnodes
  std::int64_t vocab = 0;     // 0: from --vocab-size in the arguments
};

struct ConfigCommandOptions {
  std::string config;
  std::vector<std::string> overrides;
  bool json = false;
  std::string megatron_args;    // instead of CONFIG: a Megatron-LM arguments file (- = stdin)
  std::string bridge_yaml;      // instead of CONFIG: a Megatron-Bridge config as YAML
  std::string torchtitan_toml;  // instead of CONFIG: a TorchTitan job config (TOML)
  MegatronArgsOptions megatron;
};

void add_config_options(CLI::App& command, ConfigCommandOptions& options);
// --cluster, --num-gpus and --vocab of `import megatron` and `--megatron-args`.
void add_megatron_import_options(CLI::App& command, MegatronArgsOptions& options);
models::MegatronImportOptions import_options(const MegatronArgsOptions& options);
// CONFIG becomes optional: the run config may come from --megatron-args FILE, --bridge FILE or
// --torchtitan FILE instead (what `wallsim import` reads).
void add_megatron_args_option(CLI::App& command, ConfigCommandOptions& options);

// CONFIG is a path (working directory, then the data root) or a shipped example's name.
std::string resolve_config_path(const std::string& reference);
// From CONFIG, or from one of the foreign formats (its warnings logged); `--set` applies to
// either.
models::RunConfig load_config(const ConfigCommandOptions& options);

// HBM bytes of one GPU from the run's calibration profile (the cluster GPU's shipped profile
// unless the config names one).
double hbm_bytes(const models::RunConfig& config);
// Its compute capability (major·10 + minor), from the same profile.
int compute_capability(const models::RunConfig& config);

// Notes go to stderr as warnings (stdout stays one JSON document with --json).
void log_notes(const std::vector<std::string>& notes);

}  // namespace wallsim::cli
