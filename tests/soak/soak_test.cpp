// Random-layout soak test: draws layouts at random (fixed seed) over the shipped models and
// clusters, both fidelities and both network models, simulates each through the library, and
// checks that every one either is rejected up front with InputError or finishes with the
// replay's invariants intact and a finite, positive step time.
//
//   soak_test [LAYOUTS] [SEED]        (or WALLSIM_SOAK_LAYOUTS / WALLSIM_SOAK_SEED)
//
// The draw is deliberately loose (any tp/cp/pp/vpp/micro-batch/batch mix on 8–128 GPUs, now and
// then a named pipeline schedule, expert parallelism and its all-to-all overlap, sharded data
// parallelism, activation offloading, CUDA graphs and a CP exchange type), so a
// share of the draws breaks a layout rule; those count as rejected and the draw goes on until
// LAYOUTS layouts have been simulated. Exit status 0 only if every simulated layout passed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/run/simulate.hpp"
#include "sim/core/input_error.hpp"

namespace {

using nlohmann::json;
using wallsim::models::RunConfig;
using wallsim::models::SimulationResult;

constexpr std::uint64_t kDefaultSeed = 20240611;
constexpr long kDefaultLayouts = 100;
constexpr int kMaxDrawsPerLayout = 200;  // a draw loop that never finds a valid layout is a bug

struct Options {
  long layouts = kDefaultLayouts;
  std::uint64_t seed = kDefaultSeed;
};

struct Tally {
  long simulated = 0;
  long rejected = 0;
  long failed = 0;
  double slowest_s = 0;
  std::string slowest;
};

template <typename T>
const T& pick(std::mt19937_64& rng, const std::vector<T>& values) {
  return values[std::uniform_int_distribution<std::size_t>(0, values.size() - 1)(rng)];
}

bool coin(std::mt19937_64& rng, double p_true = 0.5) {
  return std::bernoulli_distribution(p_true)(rng);
}

std::vector<std::string> json_files(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());  // directory order is not portable; the draw must be
  return names;
}

// Layouts are drawn loosely; the config loader is the judge of which are valid.
json draw_parallel(std::mt19937_64& rng) {
  const std::int64_t tp = pick<std::int64_t>(rng, {1, 2, 4, 8});
  const std::int64_t cp = coin(rng, 0.2) ? 2 : 1;
  const std::int64_t pp = pick<std::int64_t>(rng, {1, 1, 2, 4, 8});
  const std::int64_t vpp = pp > 1 && coin(rng, 0.3) ? pick<std::int64_t>(rng, {2, 3, 4}) : 1;
  return {{"tp", tp},
          {"sequence_parallel", tp > 1 && coin(rng, 0.8)},
          {"cp", cp},
          {"pp", pp},
          {"vpp", vpp}};
}

json draw_training(std::mt19937_64& rng, std::int64_t dp_guess) {
  const std::int64_t micro_batch = pick<std::int64_t>(rng, {1, 1, 2});
  const std::int64_t microbatches = pick<std::int64_t>(rng, {1, 2, 4, 8});
  return {
      {"seq_len", pick<std::int64_t>(rng, {1024, 2048, 4096})},
      {"micro_batch", micro_batch},
      {"global_batch", micro_batch * microbatches * dp_guess},
      {"precision", coin(rng, 0.2) ? "fp8" : "bf16"},
      {"recompute", pick<std::string>(rng, {"none", "selective", "full"})},
      {"distributed_optimizer", coin(rng, 0.7)},
      {"overlap",
       {{"tp_comm", coin(rng)}, {"dp_grad_reduce", coin(rng)}, {"dp_param_gather", coin(rng)}}}};
}

// Case i: fidelity and network cycle through all four pairs so any run covers each of them.
json draw_config(std::mt19937_64& rng, long index, const std::vector<std::string>& models,
                 const std::vector<std::string>& clusters) {
  const bool full = index % 2 == 1;
  // Full fidelity simulates every rank: keep it to 8–32 GPUs so a case stays well under a second.
  const std::int64_t gpus =
      full ? pick<std::int64_t>(rng, {8, 16, 32}) : pick<std::int64_t>(rng, {8, 16, 32, 64, 128});
  json parallel = draw_parallel(rng);
  const std::int64_t model_parallel = parallel["tp"].get<std::int64_t>() *
                                      parallel["cp"].get<std::int64_t>() *
                                      parallel["pp"].get<std::int64_t>();
  const std::int64_t dp = std::max<std::int64_t>(1, gpus / model_parallel);
  json training = draw_training(rng, dp);
  // Sharded data parallelism, activation offloading and CUDA graphs, now and then.
  if (coin(rng, 0.15)) {
    parallel["data_sharding"] = pick<std::string>(rng, {"grads", "params"});
    training["distributed_optimizer"] = true;
  }
  if (coin(rng, 0.1)) training["offload"] = {{"activations", true}};
  if (coin(rng, 0.1))
    training["cuda_graphs"] = pick<std::string>(rng, {"per_layer", "full_iteration"});
  if (parallel["cp"].get<std::int64_t>() > 1 && coin(rng, 0.5)) {
    parallel["cp_comm_type"] = pick<std::string>(rng, {"a2a", "all_gather", "a2a+p2p"});
  }
  // MoE models: expert parallelism and its all-to-all overlap (dense models refuse ep > 1).
  if (coin(rng, 0.3)) {
    parallel["ep"] = pick<std::int64_t>(rng, {2, 4, 8});
    training["overlap"]["ep_comm"] = coin(rng);
  }
  // A quarter of the pipelines name a schedule with W passes (the V shapes and DualPipe take two
  // chunks per stage); the loader refuses what the schedule cannot run.
  if (parallel["pp"].get<std::int64_t>() > 1 && coin(rng, 0.25)) {
    const std::string schedule =
        pick<std::string>(rng, {"zb_h1", "zb_h2", "zbv", "dualpipev", "dualpipe"});
    training["schedule"] = schedule;
    parallel["vpp"] = schedule.rfind("zb_h", 0) == 0 ? 1 : 2;
    if (schedule.rfind("dualpipe", 0) == 0) {  // at least 2·pp micro-batches (an even number)
      const std::int64_t microbatches =
          2 * parallel["pp"].get<std::int64_t>() * pick<std::int64_t>(rng, {1, 2});
      training["global_batch"] = training["micro_batch"].get<std::int64_t>() * microbatches * dp;
    }
  }
  return {{"model", "../models/" + pick(rng, models)},
          {"cluster", "../clusters/" + pick(rng, clusters)},
          {"num_gpus", gpus},
          {"parallel", parallel},
          {"training", training},
          {"simulation",
           {{"fidelity", full ? "full" : "symmetric"},
            {"network", (index / 2) % 2 == 0 ? "flow" : "analytical"}}}};
}

// Empty when the result passes; otherwise what is wrong with it.
std::string check(const SimulationResult& result) {
  const auto& invariants = result.replay.invariants;
  if (!invariants.ok()) return invariants.describe();
  std::size_t ops = 0;
  for (const auto& graph : result.program.graphs) ops += graph.size();
  if (invariants.ops_started != ops || invariants.ops_ended != ops) {
    return "ran " + std::to_string(invariants.ops_ended) + " of " + std::to_string(ops) + " ops";
  }
  const double step = result.summary.iteration_time_s;
  if (!std::isfinite(step) || step <= 0) return "step time " + std::to_string(step) + " s";
  if (!std::isfinite(result.summary.mfu) || result.summary.mfu <= 0) return "MFU not positive";
  return "";
}

std::string describe(const json& config) {
  const json& p = config["parallel"];
  const json& t = config["training"];
  const json& s = config["simulation"];
  return config["model"].get<std::string>().substr(10) + " on " +
         std::to_string(config["num_gpus"].get<std::int64_t>()) + " " +
         config["cluster"].get<std::string>().substr(12) + " tp" + p["tp"].dump() + " cp" +
         p["cp"].dump() + " pp" + p["pp"].dump() + " vpp" + p["vpp"].dump() +
         (p.contains("ep") ? " ep" + p["ep"].dump() : "") + " mb" + t["micro_batch"].dump() +
         " gb" + t["global_batch"].dump() + " s" + t["seq_len"].dump() + " " +
         t["recompute"].get<std::string>() + " " + t["precision"].get<std::string>() + " " +
         t.value("schedule", std::string("megatron")) + " " +
         (p.contains("data_sharding") ? p["data_sharding"].get<std::string>() + " " : "") +
         (p.contains("cp_comm_type") ? p["cp_comm_type"].get<std::string>() + " " : "") +
         (t.contains("offload") ? "offload " : "") +
         (t.contains("cuda_graphs") ? t["cuda_graphs"].get<std::string>() + " " : "") +
         s["fidelity"].get<std::string>() + "/" + s["network"].get<std::string>();
}

// One layout: draws until the loader accepts one, then simulates it.
void run_case(std::mt19937_64& rng, long index, const std::string& root,
              const std::vector<std::string>& models, const std::vector<std::string>& clusters,
              Tally& tally) {
  for (int draw = 0; draw < kMaxDrawsPerLayout; ++draw) {
    const json document = draw_config(rng, index, models, clusters);
    const std::string name = describe(document);
    RunConfig config;
    try {
      config =
          wallsim::models::run_config_from_json(document, root + "/configs/examples/soak.json");
    } catch (const wallsim::InputError&) {
      ++tally.rejected;
      continue;
    }
    const auto started = std::chrono::steady_clock::now();
    std::string problem;
    std::string size;
    try {
      const SimulationResult result = wallsim::models::simulate(config);
      problem = check(result);
      size = std::to_string(result.replay.invariants.ops_ended) + " ops, " +
             std::to_string(result.replay.invariants.events) + " events";
    } catch (const wallsim::InputError&) {
      ++tally.rejected;  // a config the simulator cannot express, said so up front
      continue;
    } catch (const std::exception& e) {
      problem = std::string("exception: ") + e.what();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    ++tally.simulated;
    if (seconds > tally.slowest_s) {
      tally.slowest_s = seconds;
      tally.slowest = name;
    }
    if (!problem.empty()) ++tally.failed;
    std::printf("%4ld %-4s %7.3f s  %s (%s)%s%s\n", index, problem.empty() ? "ok" : "FAIL", seconds,
                name.c_str(), size.c_str(), problem.empty() ? "" : ": ", problem.c_str());
    if (!problem.empty()) std::printf("     config: %s\n", document.dump().c_str());
    return;
  }
  std::printf("%4ld FAIL no valid layout in %d draws\n", index, kMaxDrawsPerLayout);
  ++tally.failed;
}

Options parse_options(int argc, char** argv) {
  Options options;
  if (const char* env = std::getenv("WALLSIM_SOAK_LAYOUTS")) options.layouts = std::atol(env);
  if (const char* env = std::getenv("WALLSIM_SOAK_SEED"))
    options.seed = std::strtoull(env, nullptr, 10);
  if (argc > 1) options.layouts = std::atol(argv[1]);
  if (argc > 2) options.seed = std::strtoull(argv[2], nullptr, 10);
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse_options(argc, argv);
  if (options.layouts < 1) {
    std::fprintf(stderr, "usage: soak_test [LAYOUTS >= 1] [SEED]\n");
    return 2;
  }
  const char* home = std::getenv("WALLSIM_HOME");
  const std::string root = home ? home : WALLSIM_SOURCE_ROOT;
  const auto models = json_files(root + "/configs/models");
  const auto clusters = json_files(root + "/configs/clusters");
  std::mt19937_64 rng(options.seed);
  Tally tally;
  const auto started = std::chrono::steady_clock::now();
  for (long i = 0; i < options.layouts; ++i) run_case(rng, i, root, models, clusters, tally);
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf(
      "soak: seed %llu, %ld simulated (%ld failed), %ld draws rejected up front, %.1f s; "
      "slowest %.3f s (%s)\n",
      static_cast<unsigned long long>(options.seed), tally.simulated, tally.failed, tally.rejected,
      total_s, tally.slowest_s, tally.slowest.c_str());
  return tally.failed == 0 && tally.simulated == options.layouts ? 0 : 1;
}
