// Run configs (with their model, cluster and calibration references and `--set` overrides):
// the JSON document is the fuzz input; a trailing line "SET a.b=value" adds an override.
#include "fuzz_input.hpp"
#include "models/run_config.hpp"
#include "sim/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text = wallsim::fuzz::as_text(data, size);
  std::vector<std::string> overrides;
  if (const auto marker = text.rfind("\nSET "); marker != std::string::npos) {
    overrides.push_back(text.substr(marker + 5));
    text.resize(marker);
  }
  nlohmann::json document = nlohmann::json::parse(text, nullptr, false);
  if (document.is_discarded()) return 0;
  try {
    wallsim::models::run_config_from_json(
        document, std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/fuzz.json", overrides);
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
