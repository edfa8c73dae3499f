// `wallsim report SUMMARY|DIR [--out FILE]`: re-render report.html from a previous run's
// summary.json (and the timeline.json beside it, when present) without re-simulating.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "sim/core/input_error.hpp"
#include "tools/command.hpp"
#include "tools/report_files.hpp"

namespace wallsim::cli {
namespace {

struct ReportOptions {
  std::string input;
  std::string out;
};

int report(const ReportOptions& options) {
  namespace fs = std::filesystem;
  const fs::path input(options.input);
  const fs::path summary = fs::is_directory(input) ? input / "summary.json" : input;
  if (!fs::exists(summary)) {
    throw InputError("command line", "SUMMARY", options.input,
                     "no summary.json there (give a run's --out directory or its summary.json)");
  }
  const fs::path dir = summary.parent_path();
  const std::string html = options.out.empty() ? (dir / "report.html").string() : options.out;
  render_report(summary.string(), (dir / "timeline.json").string(), html);
  std::cout << "wrote " << html << "\n";
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand(
      "report", "Re-render report.html from a previous run's summary.json (no re-simulation)");
  sub->add_option("SUMMARY", options->input, "A run's --out directory or its summary.json")
      ->required();
  sub->add_option("--out,-o", options->out, "Write the page here (default: beside summary.json)");
  sub->callback([options, &commands] { commands.action = [options] { return report(*options); }; });
}

}  // namespace wallsim::cli
