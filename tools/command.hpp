// How the wallsim CLI is put together.
//
// Each subcommand lives in its own file and registers itself on the CLI11 app through an
// `add_*_command` function. Registration returns nothing; the subcommand stores what it needs
// and sets `CommandSet::action` in its parse callback, which main() runs after parsing.
// An action returns the process exit code; bad input is reported by throwing InputError,
// which main() prints as one line on stderr with exit code 2.
#pragma once

#include <functional>

namespace CLI {
class App;
}

namespace wallsim::cli {

struct CommandSet {
  std::function<int()> action;
};

void add_calibrate_command(CLI::App& app, CommandSet& commands);
void add_collective_command(CLI::App& app, CommandSet& commands);
void add_export_command(CLI::App& app, CommandSet& commands);
void add_flops_command(CLI::App& app, CommandSet& commands);
void add_import_command(CLI::App& app, CommandSet& commands);
void add_memory_command(CLI::App& app, CommandSet& commands);
void add_report_command(CLI::App& app, CommandSet& commands);
void add_run_command(CLI::App& app, CommandSet& commands);
void add_sweep_command(CLI::App& app, CommandSet& commands);
void add_sweep_merge_command(CLI::App& app, CommandSet& commands);
void add_validate_command(CLI::App& app, CommandSet& commands);

}  // namespace wallsim::cli
