// `wallsim sweep CONFIG [--gpus N] [--vary k=v,...]... [--jobs J] [--sim-memory MIB] [--out DIR]
//  [--shard i/N] [--mpi] [--resume] [--network M] [--all-recompute] [--all-microbatches]`: every
// valid layout of a model on N GPUs, pruned by the layout rules, the analytical memory check and
// recompute dominance (a layout that fits with less recompute), simulated in parallel (long 1F1B
// steps extrapolated from two short ones) and ranked (models/sweep/). Writes DIR/sweep.csv,
// sweep.json, sweep.html and configs/<id>.json.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "models/run/simulate.hpp"
#include "models/sweep/sweep_journal.hpp"
#include "models/sweep/sweep_runner.hpp"
#include "models/sweep/sweep_writers.hpp"
#include "models/validation/prediction_interval.hpp"
#include "sim/core/input_error.hpp"
#include "tools/command.hpp"
#include "tools/run_config_loading.hpp"
#include "tools/sweep_mpi.hpp"
#include "tools/sweep_output.hpp"
#include "tools/sweep_progress.hpp"

namespace wallsim::cli {
namespace {

struct SweepOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::vector<std::string> vary;
  std::int64_t gpus = 0;
  int jobs = 0;
  double sim_memory_mib = 640;
  std::string out_dir = "sweep-out";
  std::string shard = "0/1";
  std::string network;
  bool mpi = false;
  bool resume = false;
  bool all_recompute = false;
  bool all_microbatches = false;
  bool json = false;
  std::size_t top = 10;
  int samples = 1;
  std::string objective;  // "" = p50 with --samples, the step without
};

// Everything a shard's run needs, loaded once.
struct SweepSetup {
  models::SweepBase base;
  models::SweepSpace space;
  Profile profile;
  models::SweepObjective objective = models::SweepObjective::step;
  std::optional<PredictionInterval> band;  // around a 1 s step
};

// --samples and --objective: sampling needs a varied base config, ranking by a statistic needs
// samples.
models::SweepObjective checked_objective(const SweepOptions& options,
                                         const models::RunConfig& base) {
  if (options.samples > 1 && !base.variability.active()) {
    throw InputError("--samples", "", std::to_string(options.samples),
                     "needs a `variability` section in the base config (or --set "
                     "'variability={...}'): without one every sample is the same step");
  }
  if (options.objective.empty()) {
    return options.samples > 1 ? models::SweepObjective::p50 : models::SweepObjective::step;
  }
  const auto objective = models::parse_sweep_objective(options.objective);
  if (!objective) {
    throw InputError("--objective", "", options.objective, "must be one of: step, p50, p90, mean");
  }
  if (*objective != models::SweepObjective::step && options.samples < 2) {
    throw InputError("--objective", "", options.objective,
                     "ranks by a statistic of sampled steps: give --samples N (N >= 2)");
  }
  return *objective;
}

SweepSetup load_setup(const SweepOptions& options) {
  std::vector<std::string> overrides = options.overrides;
  if (!options.network.empty()) overrides.push_back("simulation.network=" + options.network);
  SweepSetup setup{
      models::load_sweep_base(resolve_config_path(options.config), overrides, options.gpus),
      {},
      {},
      models::SweepObjective::step,
      std::nullopt};
  const auto& parsed = setup.base.parsed;
  setup.space = models::default_space({parsed.model.layers, setup.base.num_gpus,
                                       parsed.cluster.gpus_per_domain(), parsed.training.seq_len,
                                       parsed.model.moe ? parsed.model.moe->experts : 0});
  // A sharding the base config states holds for every point unless --vary sharding changes it.
  const auto& base_parallel = setup.base.document.value("parallel", nlohmann::json::object());
  if (base_parallel.contains("data_sharding") && base_parallel["data_sharding"].is_string()) {
    setup.space.sharding = {
        models::parse_data_sharding(base_parallel["data_sharding"].get<std::string>())};
  }
  for (const auto& assignment : options.vary) {
    models::apply_vary(setup.space, assignment);
    if (models::sweeps_experts(setup.space) && !parsed.model.moe) {
      throw InputError(
          "command line", "--vary", assignment,
          "expert parallelism needs a MoE model; " + parsed.model.name + " has no experts");
    }
    // A share every point would refuse is the command line's error, said once.
    if (assignment.rfind("placement=", 0) == 0) {
      for (const auto& gpus : setup.space.placement) {
        try {
          models::variant_of(parsed, {"placement.gpus_per_domain=" + std::to_string(*gpus)});
        } catch (const InputError& e) {
          throw InputError("command line", "--vary", assignment, e.what());
        }
      }
    }
  }
  setup.profile = models::run_profile(parsed);
  setup.objective = checked_objective(options, parsed);
  setup.band =
      models::prediction_interval(models::load_step_time_errors(models::step_time_errors_path()),
                                  models::run_traits(parsed), 1.0);
  return setup;
}

std::vector<models::SweepRow> read_resume(const std::string& path, const std::string& fingerprint,
                                          const models::ShardSpec& shard) {
  std::ifstream in(path);
  if (!in) {
    spdlog::warn("--resume: no journal {} yet; starting from the beginning", path);
    return {};
  }
  return models::read_journal(in, fingerprint, shard, path);
}

// One shard on this machine: resume, screen, simulate with progress and journal.
models::SweepReport run_shard(const SweepSetup& setup, const SweepOptions& options,
                              const models::ShardSpec& shard, bool show_progress) {
  std::filesystem::create_directories(options.out_dir);
  const std::string journal_file = journal_path(options.out_dir, shard);
  const std::string fp =
      models::sweep_fingerprint(setup.base, setup.space, options.samples, setup.objective,
                                options.all_recompute, options.all_microbatches);
  models::SweepRunOptions run;
  run.jobs = options.jobs > 0 ? options.jobs
                              : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  run.simulation_memory_bytes = options.sim_memory_mib * 1024 * 1024;
  run.shard = shard;
  run.samples = options.samples;
  run.objective = setup.objective;
  run.all_recompute = options.all_recompute;
  run.all_microbatches = options.all_microbatches;
  if (options.resume) run.already_done = read_resume(journal_file, fp, shard);
  // Rewritten from what was read, so a line cut short by the interruption does not stay.
  std::ofstream journal(journal_file, std::ios::trunc);
  if (!journal) throw InputError("command line", "--out", journal_file, "cannot write");
  models::write_journal_header(journal, fp, shard);
  for (const auto& row : run.already_done) models::write_journal_row(journal, row);

  SweepProgress progress(stderr, isatty(STDERR_FILENO) != 0);
  for (const auto& row : run.already_done) progress.consider(row);
  const auto resumed = static_cast<std::int64_t>(run.already_done.size());
  run.on_screened = [&](const models::SweepCounts& counts) {
    if (show_progress) progress.screened(counts, resumed);
  };
  run.on_row = [&](const models::SweepRow& row, std::int64_t done, std::int64_t total,
                   double work_done) {
    models::write_journal_row(journal, row);
    if (show_progress) progress.row(row, done, total, work_done);
  };
  const models::SweepHardware hw{setup.profile.gpu, setup.profile.comm,
                                 setup.profile.gpu.hbm_bytes};
  auto report = models::run_sweep(setup.base, setup.space, hw, run);
  report.band = setup.band;
  if (show_progress) progress.finish(report.counts.simulated);
  return report;
}

void finish(const SweepSetup& setup, const SweepOptions& options,
            const models::SweepReport& report) {
  write_report_files(report, options.out_dir);
  write_row_configs(setup.base, report, options.out_dir);
  if (options.json) {
    models::write_sweep_json(report, std::cout);
  } else {
    models::write_sweep_text(report, std::cout, options.top);
    if (!report.rows.empty() && !report.rows.front().failed()) {
      const models::SweepRow& best = report.rows.front();
      std::cout << "best: wallsim run " << options.out_dir << "/configs/" << best.id << ".json"
                << (best.extrapolated ? "  (its step was extrapolated; this simulates it whole)"
                                      : "")
                << "\n      Megatron-LM: "
                << (best.megatron_args.empty()
                        ? "none (training.schedule " + models::effective_schedule(best.point) +
                              " is not a Megatron-LM schedule)"
                        : best.megatron_args)
                << "\n";
    }
    std::cout << "wrote " << options.out_dir << "/sweep.csv, sweep.json, sweep.html and "
              << report.rows.size() << " configs\n";
  }
  if (report.counts.simulated == 0) {
    spdlog::warn("no layout of the space passes the layout rules and fits in memory");
  }
}

int run(const SweepOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const models::ShardSpec shard = models::parse_shard(options.shard);
  if (options.mpi && shard.count > 1) {
    throw InputError("command line", "--shard", options.shard, "cannot be combined with --mpi");
  }
  const SweepSetup setup = load_setup(options);
  std::optional<models::SweepReport> report;
  if (options.mpi) {
    report = run_sweep_over_mpi([&](const models::ShardSpec& rank_shard, bool root) {
      return run_shard(setup, options, rank_shard, root);
    });
    if (!report) return 0;  // not rank 0: rank 0 writes the outputs
  } else {
    report = run_shard(setup, options, shard, true);
  }
  finish(setup, options, *report);
  const double wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "sweep: wall time %.1f s\n", wall_s);
  return 0;
}

}  // namespace

void add_sweep_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand(
      "sweep", "Every valid layout of a model on N GPUs, pruned, simulated in parallel, ranked");
  sub->add_option("CONFIG", options->config, "Run config (JSON) or a shipped example name")
      ->required();
  sub->add_option("--gpus", options->gpus, "Number of GPUs (default: the config's num_gpus)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--vary", options->vary,
                  "Replace a knob's values, e.g. --vary tp=2,4,8 pp=1,2,4 recompute=none "
                  "(knobs: tp sp cp pp vpp schedule ep etp dispatcher mb recompute dist_opt "
                  "sharding overlap offload graphs placement)");
  sub->add_option("--set", options->overrides, "Override a field of the base config");
  sub->add_option("--jobs,-j", options->jobs, "Worker threads (default: all cores)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--sim-memory", options->sim_memory_mib,
                  "MiB of estimated simulator memory the points running at once may hold; a "
                  "larger point runs alone (default 640)")
      ->check(CLI::Range(1.0, 1048576.0));
  sub->add_option("--out", options->out_dir, "Output folder (default sweep-out)");
  sub->add_option("--shard", options->shard,
                  "Only shard i of N (i/N; points with index % N == i), e.g. for Slurm arrays");
  sub->add_option("--network", options->network, "Network model for every point: analytical|flow")
      ->check(CLI::IsMember({"analytical", "flow"}));
  sub->add_flag("--mpi", options->mpi, "Spread the points over MPI ranks (mpirun -n K ...)");
  sub->add_flag("--resume", options->resume, "Continue an interrupted sweep from its journal");
  sub->add_flag("--all-recompute", options->all_recompute,
                "Also simulate heavier recomputes of layouts that fit with a lighter one");
  sub->add_flag("--all-microbatches", options->all_microbatches,
                "Simulate every micro-batch of long 1F1B steps (by default extrapolated from "
                "the steps of pp + 1 and pp + 2 micro-batches)");
  sub->add_flag("--json", options->json, "Print sweep.json on stdout instead of the table");
  sub->add_option("--top", options->top, "Rows in the printed table (default 10)");
  sub->add_option("--samples", options->samples,
                  "Replay N seeded steps of each layout (needs a `variability` section) and rank "
                  "by --objective")
      ->check(CLI::Range(1, 100000));
  sub->add_option("--objective", options->objective,
                  "Rank by step (the deterministic step), p50, p90 or mean of the sampled steps "
                  "(default: p50 with --samples, step without)");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
