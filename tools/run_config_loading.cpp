#include "tools/run_config_loading.hpp"

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
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

models::RunConfig load_config(const ConfigCommandOptions& options) {
  return models::load_run_config(resolve_config_path(options.config), options.overrides);
}

double hbm_bytes(const models::RunConfig& config) {
  if (config.calibration_inline) {
    const nlohmann::json& profile = *config.calibration_inline;
    if (!profile.contains("gpu")) {
      JsonNode(profile, config.file, "calibration").fail("an inline profile needs a gpu section");
    }
    return parse_gpu_profile(JsonNode(profile.at("gpu"), config.file, "calibration.gpu")).hbm_bytes;
  }
  const std::string path = config.calibration_path.empty()
                               ? shipped_profile_path(config.cluster.gpu)
                               : config.calibration_path;
  return load_profile(path).gpu.hbm_bytes;
}

void log_notes(const std::vector<std::string>& notes) {
  for (const auto& note : notes) spdlog::warn("{}", note);
}

}  // namespace wallsim::cli
