// `wallsim import torchtitan`: the input is a TorchTitan job config in TOML. Whatever imports
// must load as a run config and export to TOML that imports again; anything else must be
// rejected with InputError.
#include "fuzz_input.hpp"
#include "models/launch_args/torchtitan_export.hpp"
#include "models/launch_args/torchtitan_import.hpp"
#include "models/run_config.hpp"
#include "sim/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wallsim::models::MegatronImportOptions options;
  options.num_gpus = 8;
  try {
    const auto imported = wallsim::models::import_torchtitan_toml(
        wallsim::fuzz::as_text(data, size), "fuzz", options);
    const auto config = wallsim::models::run_config_from_json(imported.config, "fuzz");
    const auto exported = wallsim::models::export_torchtitan_toml(config);
    wallsim::models::import_torchtitan_toml(exported.toml, "exported", options);
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
