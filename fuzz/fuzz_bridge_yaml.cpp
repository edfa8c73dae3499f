// `wallsim import bridge`: the input is a Megatron-Bridge ConfigContainer in YAML. Whatever
// imports must load as a run config; anything else must be rejected with InputError.
#include "fuzz_input.hpp"
#include "models/launch_args/bridge_import.hpp"
#include "models/run_config.hpp"
#include "sim/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wallsim::models::MegatronImportOptions options;
  options.num_gpus = 8;
  try {
    const auto imported =
        wallsim::models::import_bridge_yaml(wallsim::fuzz::as_text(data, size), "fuzz", options);
    wallsim::models::run_config_from_json(imported.config, "fuzz");
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
