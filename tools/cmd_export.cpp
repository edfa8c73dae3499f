// `wallsim export megatron CONFIG [--set k=v] [--one-line] [--torchrun]`: the Megatron-LM arguments
// that launch the layout CONFIG simulates (models/launch_args/megatron_export.hpp), on stdout; what
// Megatron-LM cannot express goes to stderr as warnings. `wallsim export torchtitan CONFIG [--set
// k=v]` the same as a TorchTitan job config TOML (models/launch_args/torchtitan_export.hpp).
#include <iostream>
#include <memory>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "models/launch_args/megatron_export.hpp"
#include "models/launch_args/torchtitan_export.hpp"
#include "tools/command.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

struct ExportOptions {
  ConfigCommandOptions config;
  bool one_line = false;
  bool torchrun = false;
};

int run(const ExportOptions& options) {
  const models::RunConfig config = load_config(options.config);
  const models::MegatronExport exported = models::export_megatron_args(config);
  for (const auto& note : exported.notes) spdlog::warn("{}", note);
  const std::vector<std::string> prefix =
      options.torchrun ? models::torchrun_words(config) : std::vector<std::string>{};
  std::cout << models::format_megatron_args(exported.options, !options.one_line, prefix);
  if (options.one_line) std::cout << "\n";
  return 0;
}

int run_torchtitan(const ConfigCommandOptions& options) {
  const models::TorchTitanExport exported = models::export_torchtitan_toml(load_config(options));
  for (const auto& note : exported.notes) spdlog::warn("{}", note);
  std::cout << exported.toml;
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, CommandSet& commands) {
  CLI::App* exporter =
      app.add_subcommand("export", "Write a run config's layout in another tool's format");
  exporter->require_subcommand(1);
  auto options = std::make_shared<ExportOptions>();
  CLI::App* sub = exporter->add_subcommand(
      "megatron", "The Megatron-LM arguments that launch the simulated layout");
  sub->add_option("CONFIG", options->config.config, "Run config (JSON) or a shipped example name")
      ->required();
  sub->add_option("--set", options->config.overrides,
                  "Override a config field, e.g. --set parallel.tp=4");
  sub->add_flag("--one-line", options->one_line, "All arguments on one line");
  sub->add_flag("--torchrun", options->torchrun,
                "Start with torchrun --nproc_per_node G --nnodes N pretrain_gpt.py for the "
                "config's GPUs");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });

  auto titan = std::make_shared<ConfigCommandOptions>();
  CLI::App* toml = exporter->add_subcommand(
      "torchtitan", "The TorchTitan job config (TOML) that launches the simulated layout");
  toml->add_option("CONFIG", titan->config, "Run config (JSON) or a shipped example name")
      ->required();
  toml->add_option("--set", titan->overrides, "Override a config field, e.g. --set parallel.tp=4");
  toml->callback(
      [titan, &commands] { commands.action = [titan] { return run_torchtitan(*titan); }; });
}

}  // namespace wallsim::cli
