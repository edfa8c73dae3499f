// wallsim_synth_raw: synthetic raw benchmark files from a profile (NOT measurements).
//
//   wallsim_synth_raw --profile calibration/profiles/h100-sxm.json
//       --cluster configs/clusters/dgx-h100.json --seed 42 --noise 0.02 --date 2026-11-29
//       --prefix tests/data/calibration/h100-sxm-synthetic
// writes <prefix>.{gemm,attention,memory,collective}.raw.json.
#include <cstdio>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/synth/synthetic_raw.hpp"
#include "sim/core/input_error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Synthetic raw benchmark files from a profile (labelled as not measurements)"};
  std::string profile_path, cluster_path, prefix;
  wallsim::SyntheticOptions options;
  app.add_option("--profile", profile_path, "Calibration profile to draw from")->required();
  app.add_option("--cluster", cluster_path, "Cluster file (line rates, GPUs per node)")->required();
  app.add_option("--prefix", prefix, "Output path prefix")->required();
  app.add_option("--seed", options.seed, "Noise seed");
  app.add_option("--noise", options.relative_noise, "Relative sigma of the time noise");
  app.add_option("--date", options.date, "Date written into the files (YYYY-MM-DD)");
  CLI11_PARSE(app, argc, argv);
  try {
    const auto profile = wallsim::load_profile(profile_path);
    const auto cluster = wallsim::load_cluster_spec(cluster_path);
    for (const auto& raw : wallsim::synthesize_raw_files(profile, cluster, options)) {
      nlohmann::json document = wallsim::raw_file_to_json(raw);
      document["notes"] = "SYNTHETIC, not a measurement: times predicted by wallsim from " +
                          profile_path + " on " + cluster_path + ", times (1 + " +
                          std::to_string(options.relative_noise) +
                          " z), z standard normal from "
                          "std::mt19937_64 seed " +
                          std::to_string(options.seed) +
                          " (Box-Muller), clamped to +-3; written by wallsim_synth_raw";
      const std::string path = prefix + "." + wallsim::raw_kind_name(raw.kind) + ".raw.json";
      std::ofstream(path) << wallsim::raw_document_text(document);
      std::printf("%s: %zu points\n", path.c_str(), raw.size());
    }
  } catch (const wallsim::InputError& e) {
    std::fprintf(stderr, "wallsim_synth_raw: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
