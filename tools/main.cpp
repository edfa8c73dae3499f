// wallsim: predicts step time, memory and the binding wall of Megatron-style LLM training.
#include <cstdio>
#include <exception>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "sim/core/engine.hpp"
#include "sim/core/input_error.hpp"
#include "sim/graph/replay.hpp"
#include "tools/command.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitInternal = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitStuck = 3;  // the step cannot finish, or ran out of simulation.max_events

void send_logs_to_stderr() {
  auto logger = spdlog::stderr_color_mt("wallsim");
  logger->set_pattern("wallsim: %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
}

}  // namespace

int main(int argc, char** argv) {
  send_logs_to_stderr();
  CLI::App app{
      "wallsim: a discrete-event simulator of Megatron-style LLM training on GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "wallsim 0.1.0");
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Log progress to stderr");

  wallsim::cli::CommandSet commands;
  wallsim::cli::add_calibrate_command(app, commands);
  wallsim::cli::add_collective_command(app, commands);
  wallsim::cli::add_export_command(app, commands);
  wallsim::cli::add_flops_command(app, commands);
  wallsim::cli::add_import_command(app, commands);
  wallsim::cli::add_memory_command(app, commands);
  wallsim::cli::add_report_command(app, commands);
  wallsim::cli::add_run_command(app, commands);
  wallsim::cli::add_sweep_command(app, commands);
  wallsim::cli::add_sweep_merge_command(app, commands);
  wallsim::cli::add_validate_command(app, commands);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "wallsim: error: %s (see 'wallsim --help')\n", e.what());
    return kExitBadInput;
  } catch (const wallsim::InputError& e) {
    std::fprintf(stderr, "wallsim: error: %s\n", e.what());
    return kExitBadInput;
  }
  if (verbose) spdlog::set_level(spdlog::level::info);

  try {
    return commands.action ? commands.action() : kExitOk;
  } catch (const wallsim::InputError& e) {
    std::fprintf(stderr, "wallsim: error: %s\n", e.what());
    return kExitBadInput;
  } catch (const wallsim::ReplayStuck& e) {
    std::fprintf(stderr, "wallsim: the simulated step cannot finish: %s\n", e.what());
    return kExitStuck;
  } catch (const wallsim::EventBudgetExceeded& e) {
    std::fprintf(stderr, "wallsim: the simulated step did not finish: %s\n", e.what());
    return kExitStuck;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wallsim: internal error: %s\n", e.what());
    return kExitInternal;
  }
}
