// Loading the shipped calibration profiles in sim/hw tests.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"
#include "sim/hw/gpu_profile.hpp"

namespace wallsim::test {

inline std::string shipped_profile_file(const std::string& name) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/calibration/profiles/" + name + ".json";
}

// The `gpu` section of calibration/profiles/<name>.json, parsed.
inline GpuProfile load_shipped_gpu(const std::string& name) {
  const std::string file = shipped_profile_file(name);
  const nlohmann::json root = load_json_file(file);
  return parse_gpu_profile(JsonNode(root.at("gpu"), file, "gpu"));
}

}  // namespace wallsim::test
