// `wallsim run CONFIG|--megatron-args FILE [--out DIR] [--json] [--set k=v] [--trace-ranks
// LIST|all] [--sensitivity] [--samples N [--jobs J]]`: simulate one training step (with
// --samples, N seeded steps of a run with variability, reporting their spread); with --out write
// summary.json, timeline.json, trace.json and report.html into DIR.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "models/run/report_data.hpp"
#include "models/run/simulate.hpp"
#include "models/run/what_if.hpp"
#include "models/validation/prediction_interval.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/html_report.hpp"
#include "sim/report/summary_writers.hpp"
#include "sim/report/timeline.hpp"
#include "sim/report/trace_writer.hpp"
#include "tools/command.hpp"
#include "tools/report_files.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

struct RunOptions {
  ConfigCommandOptions config;
  std::string out_dir;
  std::string trace_ranks;
  bool sensitivity = false;
  int samples = 1;
  int jobs = 0;
};

void write_outputs(const models::RunConfig& config, const models::SimulationResult& result,
                   const std::vector<RankIndex>& ranks, const RunOptions& options,
                   std::ostream& human) {
  const std::string dir = options.out_dir + "/";
  std::ostringstream summary;
  write_summary_json(result.summary, summary);
  write_output_file(dir + "summary.json", "--out",
                    [&](std::ostream& out) { out << summary.view(); });
  std::ostringstream timeline;
  write_timeline_json(
      models::trace_input(config, result, models::representative_ranks(result.program)), timeline);
  write_output_file(dir + "timeline.json", "--out",
                    [&](std::ostream& out) { out << timeline.view(); });
  const TraceInput trace = models::trace_input(config, result, ranks);
  TraceStats stats;
  const auto trace_bytes = write_output_file(dir + "trace.json", "--out", [&](std::ostream& out) {
    stats = write_chrome_trace(trace, out);
  });
  // The page is rendered from the documents in memory, not read back from the files.
  write_output_file(dir + "report.html", "--out", [&](std::ostream& out) {
    write_html_report(summary.view(), timeline.view(), out);
  });
  human << "wrote " << dir
        << "{summary.json, report.html, timeline.json, trace.json}; trace: " << ranks.size()
        << " ranks, " << stats.slices << " ops, " << stats.flows
        << " linked collectives/transfers, " << human_size(trace_bytes) << "\n";
}

// Re-simulations of variants of the run (sensitivities, fit suggestions) at a time: --jobs (default
// all cores), as many as fit in kWhatIfMemoryBytes at an estimated kWhatIfBytesPerOp per op of
// the step (a deep MoE pipeline of 2.5 M ops peaked at 395 MiB), so a step of tens of millions
// of ops (full fidelity on 1,024 GPUs) re-simulates one at a time.
constexpr double kWhatIfMemoryBytes = 640.0 * 1024 * 1024;
constexpr double kWhatIfBytesPerOp = 160;

int what_if_threads(const RunOptions& options, const models::StepProgram& program) {
  const int jobs = options.jobs > 0
                       ? options.jobs
                       : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  double ops = 0;
  for (const auto& graph : program.graphs) ops += static_cast<double>(graph.size());
  const double fit = std::floor(kWhatIfMemoryBytes / std::max(1.0, ops * kWhatIfBytesPerOp));
  return std::clamp(static_cast<int>(std::min<double>(fit, jobs)), 1, jobs);
}

int run(const RunOptions& options) {
  const models::RunConfig config = load_config(options.config);
  models::check_trace_ranks(config, options.trace_ranks);  // before the simulation, not after
  const Profile profile = models::run_profile(config);
  spdlog::info("simulating {} on {} GPUs ({} fidelity, {} network)", config.model.name,
               config.num_gpus, models::to_string(config.simulation.fidelity),
               config.simulation.network);
  models::SimulationResult result;
  if (options.samples > 1) {
    if (!config.variability.active()) {
      throw InputError("--samples", "", std::to_string(options.samples),
                       "needs a `variability` section that varies something (noise, stragglers "
                       "or degraded links): without one every sample is the same step");
    }
    const int jobs = options.jobs > 0
                         ? options.jobs
                         : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    spdlog::info("replaying {} sampled steps, {} at a time", options.samples, jobs);
    const int every = std::max(1, options.samples / 10);
    result = models::simulate_samples(config, profile.gpu, profile.comm, options.samples, jobs,
                                      [&](int done) {
                                        if (done % every == 0 || done == options.samples) {
                                          spdlog::info("  {}/{} samples", done, options.samples);
                                        }
                                      });
  } else {
    result = models::simulate(config, profile.gpu, profile.comm);
  }
  models::add_prediction_interval(config, result.summary);
  log_notes(result.summary.notes);
  const auto trace_ranks = models::select_trace_ranks(
      result.program, options.trace_ranks, config.simulation.fidelity == models::Fidelity::kFull);
  const int what_if_jobs = what_if_threads(options, result.program);
  if (options.sensitivity) {
    spdlog::info("re-simulating up to 10 times for the sensitivities, {} at a time", what_if_jobs);
    // The what-ifs replay sample 0 of a varied run: compare them with that sample's step.
    const double baseline = result.summary.distribution
                                ? result.summary.distribution->step_s.front()
                                : result.summary.iteration_time_s;
    result.summary.sensitivities =
        models::sensitivities(config, profile.gpu, profile.comm, baseline, what_if_jobs);
  }
  if (!result.summary.fits_in_memory) {
    result.summary.fit_suggestions =
        models::fit_suggestions(config, result.summary.hbm_bytes, profile.gpu.compute_capability);
    const auto fitting =
        std::count_if(result.summary.fit_suggestions.begin(), result.summary.fit_suggestions.end(),
                      [](const auto& fit) { return fit.valid && fit.fits; });
    if (fitting > 0) {
      spdlog::info("re-simulating the {} change{} that fit, for their step time, {} at a time",
                   fitting, fitting == 1 ? "" : "s", what_if_jobs);
      models::time_fit_suggestions(config, profile.gpu, profile.comm,
                                   result.summary.iteration_time_s, result.summary.fit_suggestions,
                                   what_if_jobs);
    }
  }
  std::ostream& human = options.config.json ? std::cerr : std::cout;
  if (options.config.json) {
    write_summary_json(result.summary, std::cout);
  } else {
    write_summary_text(result.summary, std::cout);
  }
  if (!options.out_dir.empty()) write_outputs(config, result, trace_ranks, options, human);
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Simulate one training step: step time, throughput, memory and the binding wall");
  add_config_options(*sub, options->config);
  add_megatron_args_option(*sub, options->config);
  sub->add_option("--out", options->out_dir,
                  "Write summary.json, trace.json, report.html (and timeline.json) into DIR");
  sub->add_option("--trace-ranks", options->trace_ranks,
                  "Ranks in trace.json: global ranks and ranges (0,8-15) or 'all' (default: one "
                  "per stage in symmetric fidelity, up to 64 ranks in full)");
  sub->add_option("--samples", options->samples,
                  "Replay N seeded steps of a run with a `variability` section and report p10, "
                  "p50, p90 (the summary and report describe the median step)")
      ->check(CLI::Range(1, 1000000));
  sub->add_option("--jobs,-j", options->jobs,
                  "Threads for --samples, --sensitivity and the fit suggestions' re-simulations "
                  "(default: all cores; results do not depend on it)")
      ->check(CLI::Range(1, 4096));
  sub->add_flag("--sensitivity", options->sensitivity,
                "Re-simulate with ±10% NVLink, IB, GEMM efficiency and HBM bandwidth");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
