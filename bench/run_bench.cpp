// Times whole `models::simulate` calls: one config, optional overrides, one line of results.
//
//   run_bench CONFIG [key.path=value ...]
//
// prints "ranks ops events wall_s peak_rss_MiB iteration_s" for one simulated step. Run one
// configuration per process so that the peak RSS is that run's own. See bench/README.md.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"

using namespace wallsim;

namespace {

// "a.b.c=value": value parsed as JSON when it is JSON, else taken as a string.
void apply_override(nlohmann::json& document, const std::string& assignment) {
  const auto equals = assignment.find('=');
  if (equals == std::string::npos) throw std::invalid_argument("expected key=value: " + assignment);
  const std::string value_text = assignment.substr(equals + 1);
  nlohmann::json value = nlohmann::json::parse(value_text, nullptr, false);
  if (value.is_discarded()) value = value_text;
  nlohmann::json* node = &document;
  std::string path = assignment.substr(0, equals);
  for (std::size_t dot; (dot = path.find('.')) != std::string::npos; path = path.substr(dot + 1)) {
    node = &(*node)[path.substr(0, dot)];
  }
  (*node)[path] = value;
}

double peak_rss_MiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: run_bench CONFIG [key.path=value ...]\n";
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    nlohmann::json document = nlohmann::json::parse(in);
    for (int i = 2; i < argc; ++i) apply_override(document, argv[i]);
    const models::RunConfig config = models::run_config_from_json(document, argv[1]);
    const Profile profile = models::run_profile(config);  // the profile `wallsim run` uses
    const auto start = std::chrono::steady_clock::now();
    const models::SimulationResult result = models::simulate(config, profile.gpu, profile.comm);
    const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
    std::size_t ops = 0;
    for (const auto& graph : result.program.graphs) ops += graph.size();
    std::printf("ranks %zu ops %zu wall_s %.3f peak_rss_MiB %.0f iteration_s %.6f\n",
                result.program.graphs.size(), ops, wall.count(), peak_rss_MiB(),
                result.summary.iteration_time_s);
  } catch (const std::exception& e) {
    std::cerr << "run_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
