// What the reports take from a simulation: traced ranks and their links, link usage,
// sensitivities (by re-simulating) and what would make a layout fit.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/memory.hpp"
#include "models/run/report_data.hpp"
#include "models/run/what_if.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/trace_writer.hpp"

using namespace wallsim;
using namespace wallsim::models;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

const std::string kRoot = WALLSIM_SOURCE_ROOT;

// Llama 3 8B on one DGX H100 cut to 2 layers and 8 micro-batches: quick, same structure.
RunConfig small_config(std::vector<std::string> overrides = {}) {
  overrides.insert(overrides.begin(), {"model.layers=2", "training.global_batch=32"});
  return load_run_config(kRoot + "/configs/examples/llama3-8b-8gpu.json", overrides);
}

const Profile& h100() {
  static const Profile profile = load_profile(kRoot + "/calibration/profiles/h100-sxm.json");
  return profile;
}

SimulationResult run(const RunConfig& config) {
  return simulate(config, h100().gpu, h100().comm);
}

}  // namespace

TEST_CASE("a full-fidelity trace links every collective across all its ranks", "[models][report]") {
  const RunConfig config = small_config({"simulation.fidelity=full"});
  const SimulationResult result = run(config);
  const auto ranks = select_trace_ranks(result.program, "", true);
  REQUIRE(ranks.size() == 8);
  std::ostringstream out;
  const TraceStats stats = write_chrome_trace(trace_input(config, result, ranks), out);
  const json trace = json::parse(out.str());
  // Flow ends by (pid, tid, ts) -> how many ranks their flow links.
  std::map<int, int> flow_size;
  std::map<std::tuple<int, int, double>, int> flow_at;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "t" || e["ph"] == "f") {
      ++flow_size[e["id"]];
      flow_at[{e["pid"].get<int>(), e["tid"].get<int>(), e["ts"].get<double>()}] = e["id"];
    }
  }
  CHECK(stats.flows == flow_size.size());
  int collectives = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X" || !e["args"].contains("group")) continue;
    const auto members = result.program.groups.at(e["args"]["group"].get<std::size_t>()).size();
    if (members < 2) continue;
    ++collectives;
    const auto at = flow_at.find({e["pid"].get<int>(), e["tid"].get<int>(), e["ts"].get<double>()});
    REQUIRE(at != flow_at.end());
    CHECK(flow_size[at->second] == static_cast<int>(members));
  }
  CHECK(collectives > 0);
  CHECK(trace["traceEvents"][0]["args"]["name"] == "pp0 tp0 cp0 dp0");
}

TEST_CASE("trace ranks: one per stage by default, a list, or all, unknown ranks rejected",
          "[models][report]") {
  const SimulationResult symmetric = run(small_config({"parallel.pp=2", "parallel.tp=1"}));
  CHECK(representative_ranks(symmetric.program).size() == 2);
  CHECK(select_trace_ranks(symmetric.program, "", false).size() == 2);
  const SimulationResult full =
      run(small_config({"parallel.pp=2", "parallel.tp=1", "simulation.fidelity=full"}));
  CHECK(select_trace_ranks(full.program, "0,2-3", true).size() == 3);
  CHECK(select_trace_ranks(full.program, "all", true).size() == 8);
  CHECK(select_trace_ranks(full.program, "", true, 4).size() == 4);
  CHECK_THROWS_AS(select_trace_ranks(full.program, "1-x", true), InputError);
  CHECK_THROWS_AS(select_trace_ranks(symmetric.program, "7", false), InputError);
}

TEST_CASE("trace ranks are checked against the config before anything is simulated",
          "[models][report]") {
  // pp 2 on 8 GPUs, symmetric: the simulated ranks are one per stage, the ranks
  // simulated_global_ranks names and build_step then simulates.
  const RunConfig symmetric = small_config({"parallel.pp=2", "parallel.tp=1"});
  const auto simulated = simulated_global_ranks(symmetric.layout, Fidelity::kSymmetric);
  CHECK(simulated == run(symmetric).program.global_rank);
  const std::string first = std::to_string(simulated.front());
  CHECK_NOTHROW(check_trace_ranks(symmetric, first));
  CHECK_NOTHROW(check_trace_ranks(symmetric, "all"));
  CHECK_THROWS_WITH(check_trace_ranks(symmetric, "7"), Contains("not a simulated rank"));
  CHECK_THROWS_WITH(check_trace_ranks(symmetric, "0-99999999999"),
                    Contains("not a rank of this run (ranks 0-7)"));
  CHECK_THROWS_WITH(check_trace_ranks(symmetric, "1-x"), Contains("such as 0,8-15"));
  const RunConfig full =
      small_config({"parallel.pp=2", "parallel.tp=1", "simulation.fidelity=full"});
  CHECK_NOTHROW(check_trace_ranks(full, "7"));
}

TEST_CASE("link usage: the busiest links in order, NVLink carrying the traffic of one node",
          "[models][report]") {
  const SimulationResult result = run(small_config());
  const RunSummary& s = result.summary;
  REQUIRE(!s.busiest_links.empty());
  for (std::size_t i = 1; i < s.busiest_links.size(); ++i) {
    CHECK(s.busiest_links[i - 1].busy_s >= s.busiest_links[i].busy_s);
  }
  CHECK(s.busiest_links.front().name.find("gpu") != std::string::npos);
  REQUIRE(s.link_tiers.size() == 1);  // one node: nothing leaves it
  CHECK(s.link_tiers[0].tier == "nvlink");
  CHECK(s.link_tiers[0].max_utilization > 0);
  CHECK(s.link_tiers[0].max_utilization <= 1.0);
  for (const auto& group : s.exposure_by_group) CHECK(group.tier == "nvlink");
}

TEST_CASE("more bandwidth or efficiency never slows a step, less never speeds it up",
          "[models][report][sensitivity]") {
  // Two nodes so that the IB bandwidth matters too.
  const RunConfig config = small_config({"num_gpus=16"});
  const SimulationResult base = run(config);
  const double step = base.summary.iteration_time_s;
  const auto all = sensitivities(config, h100().gpu, h100().comm, step);
  // Four hardware parameters at ×1.1 and ×0.9, the host's issue cost ×0.5 and the next
  // CUDA-graph scope (per_layer from the example's eager default).
  REQUIRE(all.size() == 10);
  CHECK(all[8].parameter == "host_issue_cost");
  CHECK(all[9].parameter == "cuda_graphs");
  for (const Sensitivity& x : all) {
    CAPTURE(x.parameter, x.factor, x.step_s, step);
    // Bandwidths and efficiency: more is faster. The host's issue cost: less is faster.
    const bool faster = x.parameter == "host_issue_cost" ? x.factor < 1 : x.factor > 1;
    const bool slower = x.parameter == "host_issue_cost" ? x.factor > 1 : x.factor < 1;
    if (faster) CHECK(x.step_s <= step * (1 + 1e-12));
    if (slower) CHECK(x.step_s >= step * (1 - 1e-12));
    CHECK(x.change == Approx(x.step_s / step - 1));
  }
  // GEMM time dominates this step: faster GEMMs must show.
  CHECK(all[4].parameter == "gemm_efficiency");
  CHECK(all[5].change > 0);
  // Three threads give the same answers in the same order as one.
  const auto threaded = sensitivities(config, h100().gpu, h100().comm, step, 3);
  REQUIRE(threaded.size() == all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    CHECK(threaded[i].parameter == all[i].parameter);
    CHECK(threaded[i].factor == all[i].factor);
    CHECK(threaded[i].step_s == all[i].step_s);
  }
}

TEST_CASE("a layout that does not fit gets changes that lower its peak", "[models][report]") {
  const std::vector<std::string> tight = {
      "parallel.tp=1",           "parallel.sequence_parallel=false",
      "training.recompute=none", "training.distributed_optimizer=false",
      "training.micro_batch=4",  "model.layers=32"};
  const RunConfig config = small_config(tight);
  const double hbm = h100().gpu.hbm_bytes;
  const auto base = memory_report(config.model, config.layout, config.training, hbm);
  REQUIRE(!base.fits_in_memory);
  const auto fits = fit_suggestions(config, hbm);
  std::set<std::string> changes;
  for (const FitCandidate& f : fits) {
    changes.insert(f.change);
    CAPTURE(f.change, f.note);
    if (!f.valid) continue;
    // Selective recompute re-runs core attention, which flash attention does not store anyway:
    // it may save nothing here. Every other change must lower the peak.
    if (f.change == "recompute=selective") {
      CHECK(f.peak_bytes <= base.peak_bytes);
    } else {
      CHECK(f.peak_bytes < base.peak_bytes);
    }
    CHECK(f.fits == (f.peak_bytes <= hbm));
  }
  for (const char* expected :
       {"recompute=selective", "recompute=full", "distributed_optimizer=true", "micro_batch=2",
        "pp=2", "tp=2", "data_sharding=grads", "data_sharding=params", "grad_reduce_dtype=bf16",
        "offload.activations=true"}) {
    CHECK(changes.count(expected) == 1);
  }
}

TEST_CASE("an MoE layout that does not fit is offered fine-grained recompute and FP8",
          "[models][report]") {
  // Qwen3-30B-A3B on 8 H100 without recompute at 8K tokens, 4 layers: the MoE activations
  // (8 routed rows of 2·768·3 bytes per token per layer, FC1 inputs 2h each) exceed the HBM.
  const RunConfig config = load_run_config(kRoot + "/configs/examples/qwen3-30b-a3b-8gpu.json",
                                           {"training.recompute=none", "training.seq_len=32768",
                                            "training.micro_batch=2", "training.global_batch=16"});
  const double hbm = h100().gpu.hbm_bytes;
  const auto base = memory_report(config.model, config.layout, config.training, hbm);
  REQUIRE(!base.fits_in_memory);
  const auto find = [](const std::vector<FitCandidate>& all, const std::string& change) {
    for (const FitCandidate& f : all) {
      if (f.change == change) return f;
    }
    FAIL("no candidate " << change);
    return FitCandidate{};
  };
  const auto hopper = fit_suggestions(config, hbm, 90);
  // No MLA: the experts' activation and the norms; both save activations.
  const FitCandidate fine = find(hopper, "recompute moe_act + layernorm");
  CHECK(fine.overrides == std::vector<std::string>{"training.recompute=selective",
                                                   "training.recompute_modules=[\"moe_act\","
                                                   "\"layernorm\"]"});
  CHECK(fine.valid);
  CHECK(fine.peak_bytes < base.peak_bytes);
  // The optimizer on the CPU (DGX H100 states its host bandwidth), with the precision-aware
  // optimizer Megatron needs for it: the GPU keeps no optimizer state.
  const FitCandidate cpu = find(hopper, "offload.optimizer_fraction=1");
  CHECK(cpu.overrides == std::vector<std::string>{"training.offload.optimizer_fraction=1",
                                                  "training.optimizer.precision_aware=true"});
  CHECK(cpu.valid);
  CHECK(cpu.peak_bytes < base.peak_bytes);
  // The state on the host between steps, the step on the GPU: only the staging windows remain.
  const FitCandidate states = find(hopper, "offload.optimizer_states=1");
  CHECK(states.valid);
  CHECK(states.peak_bytes < base.peak_bytes);
  const FitCandidate fp8 = find(hopper, "precision=fp8");
  CHECK(fp8.valid);
  CHECK(fp8.peak_bytes < base.peak_bytes);
  // Eager instead of per-layer graphs: their static inputs and pool go (offered only with them).
  for (const FitCandidate& f : hopper) CHECK(f.change != "cuda_graphs=none");
  RunConfig graphed = config;
  graphed.training.cuda_graphs = CudaGraphs::kPerLayer;
  const auto with_graphs = memory_report(graphed.model, graphed.layout, graphed.training, hbm);
  const FitCandidate eager = find(fit_suggestions(graphed, hbm, 90), "cuda_graphs=none");
  CHECK(eager.overrides == std::vector<std::string>{"training.cuda_graphs=none"});
  CHECK(eager.valid);
  CHECK(eager.peak_bytes == Approx(base.peak_bytes));
  CHECK(with_graphs.peak_bytes - eager.peak_bytes ==
        Approx(with_graphs.stages[0].cuda_graphs).epsilon(1e-9));
  // An A100 (compute capability 8.0) has no FP8 GEMMs: not offered.
  for (const FitCandidate& f : fit_suggestions(config, hbm, 80)) CHECK(f.change != "precision=fp8");
}

TEST_CASE("a change that fits is timed against the run's own step", "[models][report]") {
  // Llama 3 8B cut to 16 layers, tp 1, micro-batch 4: about 122 GiB; full recompute, tp 2 and
  // activation offloading fit.
  const RunConfig config =
      small_config({"parallel.tp=1", "parallel.sequence_parallel=false", "training.recompute=none",
                    "training.micro_batch=4", "model.layers=16"});
  const double hbm = h100().gpu.hbm_bytes;
  const double base = run(config).summary.iteration_time_s;
  auto fits = fit_suggestions(config, hbm);
  time_fit_suggestions(config, h100().gpu, h100().comm, base, fits);
  int timed = 0;
  for (const FitCandidate& f : fits) {
    CAPTURE(f.change, f.note);
    CHECK(f.timed == (f.valid && f.fits));
    if (!f.timed) continue;
    ++timed;
    CHECK(f.step_change == Approx(f.step_s / base - 1));
    // Full recompute runs every layer's forward twice: never faster.
    if (f.change == "recompute=full") CHECK(f.step_change > 0);
  }
  CHECK(timed > 0);
  // Timed two at a time, every candidate gets the same answer.
  auto threaded = fit_suggestions(config, hbm);
  time_fit_suggestions(config, h100().gpu, h100().comm, base, threaded, 2);
  REQUIRE(threaded.size() == fits.size());
  for (std::size_t i = 0; i < fits.size(); ++i) {
    CHECK(threaded[i].timed == fits[i].timed);
    CHECK(threaded[i].step_s == fits[i].step_s);
    CHECK(threaded[i].note == fits[i].note);
  }
}
