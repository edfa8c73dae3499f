// `wallsim sweep-merge DIR... --out DIR`: joins the shards of one sweep (`wallsim sweep --shard
// i/N --out DIR_i`, e.g. a Slurm job array) into one sweep.csv, sweep.json, sweep.html and
// configs/ folder, as if the sweep had run in one piece.
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/sweep/sweep_writers.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "tools/command.hpp"
#include "tools/sweep_output.hpp"

namespace wallsim::cli {
namespace {

struct MergeOptions {
  std::vector<std::string> shard_dirs;
  std::string out_dir = "sweep-out";
  bool json = false;
};

void copy_configs(const std::vector<std::string>& dirs, const models::SweepReport& report,
                  const std::string& out_dir) {
  namespace fs = std::filesystem;
  fs::create_directories(out_dir + "/configs");
  for (const auto& row : report.rows) {
    const std::string name = "/configs/" + row.id + ".json";
    bool copied = false;
    for (const auto& dir : dirs) {
      std::error_code error;
      if (!fs::exists(dir + name)) continue;
      if (fs::absolute(dir + name) == fs::absolute(out_dir + name))
        copied = true;
      else
        copied =
            fs::copy_file(dir + name, out_dir + name, fs::copy_options::overwrite_existing, error);
      if (copied) break;
    }
    if (!copied) throw InputError("sweep-merge", "configs", row.id, "no shard folder has " + name);
  }
}

int run(const MergeOptions& options) {
  std::vector<models::SweepReport> shards;
  std::vector<std::string> names;
  for (const auto& dir : options.shard_dirs) {
    const std::string path = dir + "/sweep.json";
    shards.push_back(models::report_from_json(load_json_file(path), path));
    names.push_back(path);
  }
  const models::SweepReport merged = models::merge_reports(shards, names);
  write_report_files(merged, options.out_dir);
  copy_configs(options.shard_dirs, merged, options.out_dir);
  if (options.json) {
    models::write_sweep_json(merged, std::cout);
  } else {
    models::write_sweep_text(merged, std::cout);
    std::cout << "merged " << shards.size() << " shards into " << options.out_dir << "\n";
  }
  return 0;
}

}  // namespace

void add_sweep_merge_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<MergeOptions>();
  CLI::App* sub = app.add_subcommand(
      "sweep-merge", "Join the output folders of `wallsim sweep --shard i/N` into one sweep");
  sub->add_option("DIRS", options->shard_dirs, "The shards' output folders (each has sweep.json)")
      ->required();
  sub->add_option("--out", options->out_dir, "Output folder (default sweep-out)");
  sub->add_flag("--json", options->json, "Print the merged sweep.json on stdout");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
