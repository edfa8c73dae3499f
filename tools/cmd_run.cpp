// `wallsim run CONFIG [--out DIR] [--json] [--set k=v]`: simulate one training step.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "models/run/simulate.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/summary_writers.hpp"
#include "tools/command.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

struct RunOptions {
  ConfigCommandOptions config;
  std::string out_dir;
};

void write_outputs(const RunSummary& summary, const std::string& out_dir) {
  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  const std::string path = out_dir + "/summary.json";
  std::ofstream out(path);
  if (error || !out) throw InputError("command line", "--out", out_dir, "cannot write " + path);
  write_summary_json(summary, out);
  spdlog::info("wrote {}", path);
}

int run(const RunOptions& options) {
  const models::RunConfig config = load_config(options.config);
  const Profile profile = run_profile(config);
  spdlog::info("simulating {} on {} GPUs ({} fidelity, {} network)", config.model.name,
               config.num_gpus, config.simulation.fidelity, config.simulation.network);
  const auto result = models::simulate(config, profile.gpu, profile.comm);
  log_notes(result.summary.notes);
  if (!options.out_dir.empty()) write_outputs(result.summary, options.out_dir);
  if (options.config.json) {
    write_summary_json(result.summary, std::cout);
  } else {
    write_summary_text(result.summary, std::cout);
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Simulate one training step: step time, throughput, memory and the binding wall");
  add_config_options(*sub, options->config);
  sub->add_option("--out", options->out_dir, "Write summary.json into this directory");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
