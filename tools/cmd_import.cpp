// `wallsim import megatron ARGS_FILE|- [--cluster C] [--num-gpus N] [--vocab N] [-o FILE]`: a
// Megatron-LM launch line (a shell script holding it, bare arguments, or standard input) as a
// wallsim run config (models/launch_args/megatron_import.hpp); `wallsim import bridge RECIPE.yaml
// --num-gpus N …` the same from a Megatron-Bridge ConfigContainer (bridge_import.hpp), and
// `wallsim import torchtitan CONFIG.toml …` from a TorchTitan job config (torchtitan_import.hpp).
// Warnings name every option that is not applied; bad input exits with code 2.
#include <fstream>
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "models/launch_args/bridge_import.hpp"
#include "models/launch_args/megatron_import.hpp"
#include "models/launch_args/torchtitan_import.hpp"
#include "sim/core/input_error.hpp"
#include "tools/command.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

struct ImportOptions {
  std::string args_file;
  std::string out;
  MegatronArgsOptions megatron;
};

using Importer = models::MegatronImport (*)(const std::string&,
                                            const models::MegatronImportOptions&);

int run(const ImportOptions& options, Importer importer) {
  const models::MegatronImport result =
      importer(options.args_file, import_options(options.megatron));
  for (const auto& warning : result.warnings) spdlog::warn("{}", warning);
  for (const auto& note : result.layout_notes) spdlog::warn("{}", note);
  const std::string text = result.config.dump(2) + "\n";
  if (options.out.empty() || options.out == "-") {
    std::cout << text;
    return 0;
  }
  std::ofstream out(options.out, std::ios::binary);
  if (!out || !(out << text)) throw InputError("command line", "-o", options.out, "cannot write");
  spdlog::info("wrote {}", options.out);
  return 0;
}

}  // namespace

void add_import_command(CLI::App& app, CommandSet& commands) {
  CLI::App* import = app.add_subcommand(
      "import", "Translate a training job from another tool's format into a wallsim run config");
  import->require_subcommand(1);
  auto options = std::make_shared<ImportOptions>();
  CLI::App* sub = import->add_subcommand(
      "megatron", "Megatron-LM arguments (a launch script, bare arguments, or - for stdin)");
  sub->add_option("ARGS", options->args_file,
                  "File holding the torchrun … pretrain_gpt.py … line or the bare arguments; - "
                  "reads standard input")
      ->required();
  add_megatron_import_options(*sub, options->megatron);
  sub->add_option("-o,--out", options->out, "Write the run config here (default: stdout)");
  sub->callback([options, &commands] {
    commands.action = [options] { return run(*options, models::import_megatron_args_file); };
  });

  auto bridge = std::make_shared<ImportOptions>();
  CLI::App* yaml = import->add_subcommand(
      "bridge", "A Megatron-Bridge ConfigContainer dumped as YAML (--num-gpus required)");
  yaml->add_option("RECIPE", bridge->args_file, "The ConfigContainer YAML file")->required();
  add_megatron_import_options(*yaml, bridge->megatron);
  yaml->add_option("-o,--out", bridge->out, "Write the run config here (default: stdout)");
  yaml->callback([bridge, &commands] {
    commands.action = [bridge] { return run(*bridge, models::import_bridge_file); };
  });

  auto titan = std::make_shared<ImportOptions>();
  CLI::App* toml = import->add_subcommand(
      "torchtitan",
      "A TorchTitan job config (TOML); --num-gpus when data_parallel_shard_degree is -1");
  toml->add_option("CONFIG", titan->args_file, "The job config TOML file")->required();
  add_megatron_import_options(*toml, titan->megatron);
  toml->add_option("-o,--out", titan->out, "Write the run config here (default: stdout)");
  toml->callback([titan, &commands] {
    commands.action = [titan] { return run(*titan, models::import_torchtitan_file); };
  });
}

}  // namespace wallsim::cli
