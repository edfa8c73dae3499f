#include "tools/run_config_loading.hpp"

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/launch_args/bridge_import.hpp"
#include "models/launch_args/torchtitan_import.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/hw/gpu_profile.hpp"

namespace wallsim::cli {

std::string resolve_config_path(const std::string& reference) {
  if (auto path = resolve_data_path(reference, "")) return *path;
  if (auto path = resolve_data_path("configs/examples/" + reference + ".json", "")) return *path;
  throw InputError("command line", "CONFIG", reference,
                   "no such config file (give a path, or a shipped example such as "
                   "llama3-8b-8gpu)");
}

void add_config_options(CLI::App& command, ConfigCommandOptions& options) {
  command.add_option("CONFIG", options.config, "Run config (JSON) or a shipped example name")
      ->required();
  command.add_option("--set", options.overrides,
                     "Override a config field, e.g. --set parallel.tp=4 --set model.layers=40");
  command.add_flag("--json", options.json, "Print one JSON document on stdout");
}

void add_megatron_import_options(CLI::App& command, MegatronArgsOptions& options) {
  command
      .add_option("--cluster", options.cluster,
                  "Cluster: a shipped name (dgx-h100, dgx-h200, ...) or a cluster file")
      ->capture_default_str();
  command
      .add_option("--num-gpus", options.num_gpus,
                  "GPUs of the job (default: torchrun's --nproc_per_node x --nnodes)")
      ->check(CLI::PositiveNumber);
  command
      .add_option("--vocab", options.vocab,
                  "The tokenizer's vocabulary, when the arguments have no --vocab-size")
      ->check(CLI::PositiveNumber);
}

models::MegatronImportOptions import_options(const MegatronArgsOptions& options) {
  models::MegatronImportOptions out;
  out.cluster = options.cluster;
  if (options.num_gpus > 0) out.num_gpus = options.num_gpus;
  if (options.vocab > 0) out.vocab = options.vocab;
  return out;
}

void add_megatron_args_option(CLI::App& command, ConfigCommandOptions& options) {
  command.get_option("CONFIG")->required(false);
  command.add_option("--megatron-args", options.megatron_args,
                     "Read the job from Megatron-LM arguments (a launch script, bare arguments, "
                     "or - for stdin) instead of CONFIG");
  command.add_option("--bridge", options.bridge_yaml,
                     "Read the job from a Megatron-Bridge / NeMo 2 config dumped as YAML instead "
                     "of CONFIG");
  command.add_option("--torchtitan", options.torchtitan_toml,
                     "Read the job from a TorchTitan job config (TOML) instead of CONFIG");
  add_megatron_import_options(command, options.megatron);
}

namespace {

// The run config of a foreign format: its importer, its warnings logged, --set applied.
models::RunConfig imported_config(const models::MegatronImport& imported, const std::string& source,
                                  const std::vector<std::string>& overrides) {
  log_notes(imported.warnings);
  return models::run_config_from_json(imported.config, source, overrides);
}

}  // namespace

models::RunConfig load_config(const ConfigCommandOptions& options) {
  const int sources = !options.config.empty() + !options.megatron_args.empty() +
                      !options.bridge_yaml.empty() + !options.torchtitan_toml.empty();
  if (sources > 1) {
    throw InputError("command line", "CONFIG", options.config,
                     "give one of a run config, --megatron-args, --bridge and --torchtitan");
  }
  const models::MegatronImportOptions imports = import_options(options.megatron);
  if (!options.megatron_args.empty()) {
    const std::string source = options.megatron_args == "-" ? "<stdin>" : options.megatron_args;
    return imported_config(models::import_megatron_args_file(options.megatron_args, imports),
                           source, options.overrides);
  }
  if (!options.bridge_yaml.empty()) {
    return imported_config(models::import_bridge_file(options.bridge_yaml, imports),
                           options.bridge_yaml, options.overrides);
  }
  if (!options.torchtitan_toml.empty()) {
    return imported_config(models::import_torchtitan_file(options.torchtitan_toml, imports),
                           options.torchtitan_toml, options.overrides);
  }
  if (options.config.empty()) {
    throw InputError("command line", "CONFIG", "",
                     "missing: give a run config (or --megatron-args, --bridge or --torchtitan "
                     "FILE)");
  }
  return models::load_run_config(resolve_config_path(options.config), options.overrides);
}

namespace {

// The GPU section of the run's calibration profile: inline, given, or shipped for its GPU.
GpuProfile gpu_profile_of(const models::RunConfig& config) {
  if (config.calibration_inline) {
    const nlohmann::json& profile = *config.calibration_inline;
    if (!profile.contains("gpu")) {
      JsonNode(profile, config.file, "calibration").fail("an inline profile needs a gpu section");
    }
    return parse_gpu_profile(JsonNode(profile.at("gpu"), config.file, "calibration.gpu"));
  }
  const std::string path = config.calibration_path.empty()
                               ? shipped_profile_path(config.cluster.gpu)
                               : config.calibration_path;
  return load_profile(path).gpu;
}

}  // namespace

double hbm_bytes(const models::RunConfig& config) {
  return gpu_profile_of(config).hbm_bytes;
}

int compute_capability(const models::RunConfig& config) {
  return gpu_profile_of(config).compute_capability;
}

void log_notes(const std::vector<std::string>& notes) {
  for (const auto& note : notes) spdlog::warn("{}", note);
}

}  // namespace wallsim::cli
