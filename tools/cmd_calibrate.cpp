// `wallsim calibrate fit RAW.json... [--base PROFILE] [--cluster C] -o PROFILE` and
// `wallsim calibrate check PROFILE RAW.json... [--cluster C]` (calibration/README.md).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/fit/profile_fit.hpp"
#include "calibration/fit/residuals.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "tools/command.hpp"

namespace wallsim::cli {
namespace {

struct CalibrateOptions {
  std::vector<std::string> raw_files;
  std::string base;
  std::string cluster;
  std::string output;
  std::string profile;  // check only
};

std::vector<RawFile> load_raws(const std::vector<std::string>& paths) {
  std::vector<RawFile> raws;
  for (const auto& path : paths) raws.push_back(load_raw_file(path));
  return raws;
}

bool has_collectives(const std::vector<RawFile>& raws) {
  for (const auto& raw : raws) {
    if (!raw.collective.empty()) return true;
  }
  return false;
}

std::string resolve_cluster(const std::string& reference) {
  if (auto path = resolve_data_path(reference, "")) return *path;
  if (auto path = resolve_data_path("configs/clusters/" + reference + ".json", "")) return *path;
  throw InputError("command line", "--cluster", reference,
                   "no such cluster file (give a path, or a shipped name such as dgx-h100)");
}

// The first shipped cluster (by file name) whose GPU is `gpu`, for its line rates.
std::optional<std::string> shipped_cluster_for(const std::string& gpu) {
  const std::filesystem::path folder = data_root() + "/configs/clusters";
  if (!std::filesystem::is_directory(folder)) return std::nullopt;
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    if (load_cluster_spec(file).gpu == gpu) return file;
  }
  return std::nullopt;
}

std::optional<ClusterSpec> pick_cluster(const std::string& option, const std::string& gpu,
                                        bool needed) {
  if (!option.empty()) return load_cluster_spec(resolve_cluster(option));
  if (!needed) return std::nullopt;
  if (auto file = shipped_cluster_for(gpu)) {
    std::cerr << "wallsim: collective line rates from " << *file << " (override with --cluster)\n";
    return load_cluster_spec(*file);
  }
  throw InputError(
      "command line", "--cluster", "",
      "collective points need a cluster file (no shipped cluster has GPU " + gpu + ")");
}

std::string base_profile_path(const CalibrateOptions& options) {
  if (!options.base.empty()) return options.base;
  if (options.cluster.empty()) {
    throw InputError("command line", "--base", "",
                     "give --base PROFILE (or --cluster, whose GPU's shipped profile is the base)");
  }
  return shipped_profile_path(load_cluster_spec(resolve_cluster(options.cluster)).gpu);
}

void print_report(const std::vector<PointResidual>& residuals) {
  print_residuals(std::cout, summarize_residuals(residuals));
}

int run_fit(const CalibrateOptions& options) {
  const auto raws = load_raws(options.raw_files);
  const std::string base_path = base_profile_path(options);
  const nlohmann::json base = load_json_file(base_path);
  const std::string base_name = parse_profile(base, base_path).name;
  const auto cluster = pick_cluster(options.cluster, base_name, has_collectives(raws));
  const ProfileFit fit = fit_profile(base, base_path, raws, cluster);
  std::ofstream out(options.output);
  if (!out) throw InputError("command line", "-o", options.output, "cannot write this file");
  out << fit.document.dump(2) << "\n";
  std::cout << "wrote " << options.output << ": fitted " << fit.fitted.size() << " values from "
            << raws.size() << " raw file(s); residuals of the fitted profile:\n";
  print_report(predict_points(fit.profile, cluster, raws));
  return 0;
}

int run_check(const CalibrateOptions& options) {
  const Profile profile = load_profile(options.profile);
  const auto raws = load_raws(options.raw_files);
  const auto cluster = pick_cluster(options.cluster, profile.name, has_collectives(raws));
  std::cout << "profile " << options.profile << " against " << raws.size() << " raw file(s):\n";
  print_report(predict_points(profile, cluster, raws));
  return 0;
}

}  // namespace

void add_calibrate_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<CalibrateOptions>();
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "Fit a calibration profile to microbenchmark results");
  calibrate->require_subcommand(1);

  CLI::App* fit = calibrate->add_subcommand(
      "fit", "Fit a profile from raw bench files and print its residuals per op class");
  fit->add_option("raw", options->raw_files, "Raw JSON files written by calibration/bench")
      ->required()
      ->check(CLI::ExistingFile);
  fit->add_option("--base", options->base,
                  "Profile whose values the data cannot determine are kept (default: the "
                  "--cluster GPU's shipped profile)");
  fit->add_option("--cluster", options->cluster,
                  "Cluster file or shipped name, for line rates (default: the first shipped "
                  "cluster with the base profile's GPU)");
  fit->add_option("-o,--output", options->output, "Where to write the fitted profile")->required();
  fit->callback(
      [options, &commands] { commands.action = [options] { return run_fit(*options); }; });

  CLI::App* check = calibrate->add_subcommand(
      "check", "Predict every measured point with a profile and report the errors");
  check->add_option("profile", options->profile, "Calibration profile")
      ->required()
      ->check(CLI::ExistingFile);
  check->add_option("raw", options->raw_files, "Raw JSON files")
      ->required()
      ->check(CLI::ExistingFile);
  check->add_option("--cluster", options->cluster, "Cluster file or shipped name, for line rates");
  check->callback(
      [options, &commands] { commands.action = [options] { return run_check(*options); }; });
}

}  // namespace wallsim::cli
