// `wallsim import megatron`: the input is a launch script or an argument list. Whatever imports
// must load as a run config, export, and import again (the round trip of
// models/launch_args/megatron_export.hpp); anything else must be rejected with InputError.
#include "fuzz_input.hpp"
#include "models/launch_args/megatron_export.hpp"
#include "models/launch_args/megatron_import.hpp"
#include "models/run_config.hpp"
#include "sim/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wallsim::models::MegatronImportOptions options;
  options.num_gpus = 8;
  options.vocab = 32000;
  wallsim::models::MegatronImport imported;
  try {
    imported =
        wallsim::models::import_megatron_args(wallsim::fuzz::as_text(data, size), "fuzz", options);
  } catch (const wallsim::InputError&) {
    return 0;
  }
  // Accepted input: the round trip must not be refused.
  const auto config = wallsim::models::run_config_from_json(imported.config, "fuzz");
  const auto exported = wallsim::models::export_megatron_args(config);
  wallsim::models::import_megatron_args(
      wallsim::models::format_megatron_args(exported.options, true), "exported", options);
  return 0;
}
