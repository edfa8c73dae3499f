// What the importer tests share: paths into the source tree, loading an import's run config and
// a shipped model, and finding a warning.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "models/launch_args/megatron_import.hpp"
#include "models/model_spec.hpp"
#include "models/run_config.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::test {

inline std::string source_path(const std::string& relative) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/" + relative;
}

inline models::RunConfig load(const models::MegatronImport& imported) {
  return models::run_config_from_json(imported.config, "imported");
}

inline models::ModelSpec shipped_model(const std::string& name) {
  const nlohmann::json value = load_json_file(source_path("configs/models/" + name + ".json"));
  return models::parse_model_spec(JsonNode(value, name, ""));
}

// Whether one of the import's warnings contains `text`.
inline bool warned(const models::MegatronImport& imported, const std::string& text) {
  for (const auto& warning : imported.warnings) {
    if (warning.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace wallsim::test
