// Varied steps (the run config's `variability`, models/run/variability.hpp): a section that
// draws nothing changes nothing; noise can only lengthen a synchronised step, by the expected
// maximum over the ranks that meet; a straggler slows its group by its own slowdown; samples do
// not depend on the threads that replay them.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"
#include "models/run/variability.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/summary_writers.hpp"
#include "tests/unit/graph/fake_comm.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

Time ms(double v) {
  return Time::from_us(1000 * v);
}

// A toy data-parallel loop on `ranks` GPUs: `iterations` times, a GEMM of `compute` then an
// all-reduce of every rank (timed by loop_step; on the same stream, so the next GEMM waits).
StepProgram all_reduce_loop(int ranks, int iterations, Time compute) {
  StepProgram program;
  program.graphs.resize(static_cast<std::size_t>(ranks));
  program.groups.push_back({});
  for (int r = 0; r < ranks; ++r) {
    program.groups[0].push_back(r);
    program.global_rank.push_back(r);
    program.class_offsets.push_back({0});
    for (int i = 0; i < iterations; ++i) {
      Op gemm = test::compute(compute, 0);
      gemm.category = category_code(OpCategory::kGemm);
      program.graphs[static_cast<std::size_t>(r)].add(gemm);
      program.graphs[static_cast<std::size_t>(r)].add(test::collective(0, 0));
    }
  }
  return program;
}

// The toy's step in sample `sample` under `spec`.
double loop_step(const StepProgram& program, const VariabilitySpec& spec, Time reduce,
                 std::uint64_t sample) {
  Engine engine;
  test::FixedDelayComm comm(engine, reduce, reduce);
  VariedDurations durations(spec, program, rank_slowdowns(spec, program, 8, sample), sample);
  Replay replay(engine, program.graphs, program.groups, comm, InvariantPolicy::kThrow, &durations);
  return replay.run().end.seconds();
}

// E[max of n lognormals of mean 1 and coefficient of variation cv]: the integral over z of
// exp(sigma z - sigma^2 / 2) times the density of the largest of n standard normals,
// n phi(z) Phi(z)^(n-1) (trapezoid rule on [-8, 8], 16,001 points).
double expected_max(int n, double cv) {
  const double sigma = std::sqrt(std::log1p(cv * cv));
  const int points = 16001;
  const double step = 16.0 / (points - 1);
  double sum = 0;
  for (int i = 0; i < points; ++i) {
    const double z = -8 + step * i;
    const double phi = std::exp(-z * z / 2) / std::sqrt(2 * M_PI);
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double f = std::exp(sigma * z - sigma * sigma / 2) * n * phi * std::pow(cdf, n - 1);
    sum += (i == 0 || i == points - 1 ? 0.5 : 1.0) * f;
  }
  return sum * step;
}

std::string summary_text(const RunSummary& summary) {
  std::ostringstream out;
  write_summary_json(summary, out);
  return out.str();
}

RunConfig example(const std::vector<std::string>& overrides) {
  return load_run_config(std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/llama3-8b-8gpu.json",
                         overrides);
}

}  // namespace

TEST_CASE("a variability section that draws nothing replays the deterministic step bit for bit",
          "[models][simulate][variability]") {
  const RunConfig plain = example({});
  const RunConfig zero = example({R"(variability={"seed": 7, "gpu_cv": 0, "step_cv": 0,
      "kernel_cv": 0, "collective_jitter": 0, "stragglers": []})"});
  REQUIRE(zero.variability.enabled);
  REQUIRE_FALSE(zero.variability.active());
  CHECK(summary_text(simulate(zero).summary) == summary_text(simulate(plain).summary));
}

TEST_CASE("kernel noise lengthens a synchronised loop by the expected maximum over its ranks",
          "[models][simulate][variability]") {
  // Each iteration waits for the slowest of n GEMMs, so the step is
  // L (C E[max of n lognormals] + A); with cv = 0.1 that maximum is 1.056 for n = 2, 1.149 for
  // n = 8 and 1.225 for n = 32 (expected_max). 40 samples of 50 iterations give 2,000 maxima
  // each; the check allows 4 standard errors of the sample mean.
  VariabilitySpec spec;
  spec.enabled = true;
  spec.seed = 11;
  spec.kernel_cv.fill(0.1);
  const Time compute = ms(1);
  const Time reduce = ms(0.5);
  const int iterations = 50;
  const int samples = 40;
  double previous = 0;
  for (const int n : {2, 8, 32}) {
    const StepProgram program = all_reduce_loop(n, iterations, compute);
    const double noiseless = iterations * (compute + reduce).seconds();
    std::vector<double> steps;
    for (int s = 0; s < samples; ++s) {
      steps.push_back(loop_step(program, spec, reduce, static_cast<std::uint64_t>(s)));
    }
    const Percentiles p = percentiles(steps);
    double variance = 0;
    for (const double x : steps) variance += (x - p.mean) * (x - p.mean);
    const double standard_error = std::sqrt(variance / (samples - 1) / samples);
    const double expected =
        iterations * (compute.seconds() * expected_max(n, 0.1) + reduce.seconds());
    INFO("n = " << n << ": mean " << p.mean << " s, expected " << expected << " s");
    CHECK(p.mean >= noiseless);
    CHECK(std::abs(p.mean - expected) < 4 * standard_error);
    CHECK(p.mean > previous);  // more ranks to wait for, a longer step
    previous = p.mean;
  }
  // Second order in sigma = sqrt(ln 1.01): 1 + sigma E[Z] + sigma^2 (E[Z^2] - 1) / 2 with the
  // largest of 8 standard normals' E[Z] = 1.4236 and E[Z^2] = 2.3997: 1.1490.
  CHECK(expected_max(8, 0.1) == Approx(1.1490).epsilon(0.001));
}

TEST_CASE(
    "a 2x straggler in an all-reduce-bound data-parallel group costs one more GEMM per "
    "iteration",
    "[models][simulate][variability]") {
  // Four ranks, GEMM 1 ms then an all-reduce of 3 ms, ten times: 40 ms. Rank 2 at half speed
  // reaches each all-reduce 1 ms late and the others wait for it: 10 x (2 + 3) = 50 ms.
  VariabilitySpec spec;
  spec.enabled = true;
  spec.gpu_cv = 0;
  spec.step_cv = 0;
  spec.stragglers.push_back({2, std::nullopt, 2.0});
  const StepProgram program = all_reduce_loop(4, 10, ms(1));
  CHECK(loop_step(program, VariabilitySpec{}, ms(3), 0) == Approx(0.040));
  CHECK(loop_step(program, spec, ms(3), 0) == Approx(0.050));
}

TEST_CASE("a straggler costs a symmetric replay what it costs a full one",
          "[models][simulate][variability]") {
  // Llama 3 8B, tp2 dp4 on one node: rank 5 at 1.5x slows its class (every rank meets it at
  // the gradient reduction and its TP peer at every TP collective). Symmetric fidelity runs
  // the class at its slowest member's pace; full fidelity replays rank 5 itself.
  const std::string straggler =
      R"(variability={"gpu_cv": 0, "step_cv": 0, "stragglers": [{"rank": 5, "slowdown": 1.5}]})";
  const double plain = simulate(example({})).summary.iteration_time_s;
  const RunSummary slowed = simulate(example({straggler})).summary;
  const double symmetric = slowed.iteration_time_s;
  // The summary prices the straggler against the same sample without it: here the plain step,
  // as nothing else varies.
  REQUIRE(slowed.straggler_cost_s);
  CHECK(*slowed.straggler_cost_s == Approx(symmetric - plain));
  // Where it lands: every rank runs one program here, so the replayed rank's class runs every
  // kernel 1.5x slower; its compute time grows by half.
  REQUIRE(slowed.straggler_free_time);
  CHECK(slowed.time.compute_s - slowed.straggler_free_time->compute_s ==
        Approx(0.5 * slowed.straggler_free_time->compute_s).epsilon(0.01));
  const double full =
      simulate(example({straggler, "simulation.fidelity=full"})).summary.iteration_time_s;
  CHECK(symmetric == Approx(full).epsilon(0.01));
  // Compute is ~90% of this step and communication is not slowed: between 1.3x and 1.5x.
  CHECK(symmetric > 1.3 * plain);
  CHECK(symmetric < 1.5 * plain);
}

TEST_CASE("sampled steps do not depend on the number of threads that replay them",
          "[models][simulate][variability]") {
  const RunConfig config = example({R"(variability={"seed": 3, "kernel_cv": 0.05,
      "collective_jitter": 0.2})",
                                    "simulation.fidelity=full"});
  const Profile profile = run_profile(config);
  const SimulationResult one = simulate_samples(config, profile.gpu, profile.comm, 6, 1);
  const SimulationResult three = simulate_samples(config, profile.gpu, profile.comm, 6, 3);
  REQUIRE(one.summary.distribution);
  CHECK(one.summary.distribution->samples == 6);
  CHECK(summary_text(one.summary) == summary_text(three.summary));
  // The spread is real, and the summary describes the median sample.
  const StepDistribution& d = *one.summary.distribution;
  CHECK(d.step.p90 > d.step.p10);
  CHECK(d.step.p10 <= d.step.p50);
  CHECK(d.compute_binding + d.communication_binding + d.memory_binding == Approx(1));
  const double noiseless = simulate(example({"simulation.fidelity=full"})).summary.iteration_time_s;
  CHECK(d.step.mean > noiseless);
}

TEST_CASE("a slow rank is the one that ends the sampled steps last in full fidelity",
          "[models][simulate][variability]") {
  // Rank 5 runs every kernel 1.5x slower and the per-step noise (cv 0.0093) cannot close a 50%
  // gap, so it ends every sample last: one entry, share 1.
  const RunConfig config =
      example({R"(variability={"seed": 2, "stragglers": [{"rank": 5, "slowdown": 1.5}]})",
               "simulation.fidelity=full"});
  const Profile profile = run_profile(config);
  const SimulationResult result = simulate_samples(config, profile.gpu, profile.comm, 4, 2);
  REQUIRE(result.summary.distribution);
  const auto& critical = result.summary.distribution->critical_ranks;
  REQUIRE(critical.size() == 1);
  CHECK(critical.front().first == 5);
  CHECK(critical.front().second == Approx(1));
}

TEST_CASE("percentiles interpolate between order statistics", "[models][simulate][variability]") {
  // numpy.percentile([1, 2, 3, 4, 5], [10, 50, 90]) = [1.4, 3, 4.6].
  const Percentiles p = percentiles({5, 1, 4, 2, 3});
  CHECK(p.p10 == Approx(1.4));
  CHECK(p.p50 == Approx(3));
  CHECK(p.p90 == Approx(4.6));
  CHECK(p.mean == Approx(3));
}

TEST_CASE("a lognormal factor has mean 1 and the coefficient of variation asked for",
          "[models][simulate][variability]") {
  // 200,000 keyed draws: the sample mean within 4 standard errors (cv / sqrt(n) = 0.00045) of
  // 1 and the sample cv within 2% of 0.2.
  const int n = 200000;
  double sum = 0, squares = 0;
  for (int i = 0; i < n; ++i) {
    const double f = lognormal_factor(0.2, keyed_normal(5, {9, static_cast<std::uint64_t>(i)}));
    sum += f;
    squares += f * f;
  }
  const double mean = sum / n;
  const double cv = std::sqrt(squares / n - mean * mean) / mean;
  CHECK(std::abs(mean - 1) < 4 * 0.2 / std::sqrt(n));
  CHECK(cv == Approx(0.2).epsilon(0.02));
  CHECK(lognormal_factor(0, 3.0) == 1);
}

TEST_CASE("variability refuses stragglers it cannot place", "[models][simulate][variability]") {
  CHECK_THROWS_WITH(example({R"(variability={"stragglers": [{"rank": 8, "slowdown": 2}]})"}),
                    Catch::Contains("variability.stragglers[0].rank = 8"));
  CHECK_THROWS_WITH(
      example({R"(variability={"stragglers": [{"rank": 1, "node": 0, "slowdown": 2}]})"}),
      Catch::Contains("exactly one of"));
  CHECK_THROWS_WITH(example({R"(variability={"stragglers": [{"node": 1, "slowdown": 2}]})"}),
                    Catch::Contains("variability.stragglers[0].node = 1"));
  CHECK_THROWS_WITH(example({R"(variability={"stragglers": [{"rank": 1, "slowdown": 0.5}]})"}),
                    Catch::Contains("slowdown = 0.5"));
  CHECK_THROWS_WITH(example({R"(variability={"kernel_cv": {"gemmm": 0.1}})"}),
                    Catch::Contains("gemmm"));
}

TEST_CASE("a degraded NIC slows the data-parallel reduction that crosses it",
          "[models][simulate][variability]") {
  // tp8 within each of two DGX H100 nodes, dp2 across them: every DP reduction crosses all
  // eight rails. NIC 1.3 at a quarter of its bandwidth takes four times as long for its share,
  // and a collective ends with its slowest channel, so the exposed DP time grows several-fold.
  const std::vector<std::string> layout = {"num_gpus=16", "parallel.tp=8",
                                           "simulation.fidelity=full"};
  const auto degraded = [&](double factor) {
    auto overrides = layout;
    overrides.push_back(R"(variability={"gpu_cv": 0, "step_cv": 0, "degraded_links":
        [{"nic": {"node": 1, "rail": 3}, "bandwidth_factor": )" +
                        std::to_string(factor) + "}]}");
    return simulate(example(overrides)).summary;
  };
  const RunSummary plain = simulate(example(layout)).summary;
  const RunSummary same = degraded(1);
  const RunSummary slow = degraded(0.25);
  const auto dp = static_cast<std::size_t>(category_slot(OpCategory::kDp));
  CHECK(summary_text(same) != summary_text(plain));  // the note names the sample
  CHECK(same.iteration_time_s == plain.iteration_time_s);
  CHECK(slow.time.exposed_comm_s[dp] > 4 * plain.time.exposed_comm_s[dp]);
  CHECK(slow.iteration_time_s > plain.iteration_time_s);
}

TEST_CASE("a degraded NVLink slows its tensor-parallel group", "[models][simulate][variability]") {
  const auto tp = static_cast<std::size_t>(category_slot(OpCategory::kTp));
  const RunSummary plain = simulate(example({"simulation.fidelity=full"})).summary;
  const RunSummary slow =
      simulate(example({"simulation.fidelity=full",
                        R"(variability={"gpu_cv": 0, "step_cv": 0, "degraded_links":
          [{"nvlink": {"rank": 2}, "bandwidth_factor": 0.1}]})"}))
          .summary;
  CHECK(slow.time.exposed_comm_s[tp] > 2 * plain.time.exposed_comm_s[tp]);
}

TEST_CASE("a degraded or lost link costs a symmetric replay what it costs a full one",
          "[models][simulate][variability]") {
  // A NIC: symmetric fidelity charges the DP reduction's copies on their own NICs, so the slow
  // NIC of node 1 (no replayed rank on it) holds back the replayed flows. An NVLink: rank 6 is
  // not replayed; its class's replayed member takes the slow link (slowest-member pace).
  const std::string nic = R"(variability={"gpu_cv": 0, "step_cv": 0, "degraded_links":
      [{"nic": {"node": 1, "rail": 3}, "bandwidth_factor": 0.25}]})";
  const std::string nvlink = R"(variability={"gpu_cv": 0, "step_cv": 0, "degraded_links":
      [{"nvlink": {"rank": 6}, "bandwidth_factor": 0.1}]})";
  // A lost NIC: the copies' routes move to the next rail as the replayed ones would.
  const std::string lost = R"(variability={"gpu_cv": 0, "step_cv": 0, "lost_nics":
      [{"node": 1, "rail": 3}]})";
  const std::vector<std::string> two_nodes = {"num_gpus=16", "parallel.tp=8"};
  for (const auto& [section, layout] : {std::pair{nic, two_nodes}, std::pair{lost, two_nodes},
                                        std::pair{nvlink, std::vector<std::string>{}}}) {
    auto symmetric = layout, full = layout, plain = layout;
    symmetric.push_back(section);
    full.push_back(section);
    full.push_back("simulation.fidelity=full");
    const double slowed_symmetric = simulate(example(symmetric)).summary.iteration_time_s;
    const double slowed_full = simulate(example(full)).summary.iteration_time_s;
    const double nominal = simulate(example(plain)).summary.iteration_time_s;
    INFO(section);
    CHECK(slowed_full > nominal);
    CHECK(slowed_symmetric == Approx(slowed_full).epsilon(0.01));
  }
}

TEST_CASE("a lost NIC puts two rails' traffic on one NIC, as a NIC at half its bandwidth would",
          "[models][simulate][variability]") {
  // tp8 dp2 on two DGX H100: the DP reduction runs one ring channel per rail. With NIC 1.3
  // lost, the rail-3 channel moves to rail 4, so NIC 1.4 carries two channels at half speed
  // each; the reduction ends with its slowest channel, as when NIC 1.3 alone runs at half its
  // bandwidth (the moved channel also crosses NVLink on both ends: a few percent more).
  const auto dp = static_cast<std::size_t>(category_slot(OpCategory::kDp));
  const auto exposed_dp = [&](const std::string& section) {
    return simulate(example({"num_gpus=16", "parallel.tp=8", "simulation.fidelity=full", section}))
        .summary.time.exposed_comm_s[dp];
  };
  const double plain = exposed_dp(R"(variability={"gpu_cv": 0, "step_cv": 0})");
  const double lost = exposed_dp(
      R"(variability={"gpu_cv": 0, "step_cv": 0, "lost_nics": [{"node": 1, "rail": 3}]})");
  const double half = exposed_dp(R"(variability={"gpu_cv": 0, "step_cv": 0, "degraded_links":
      [{"nic": {"node": 1, "rail": 3}, "bandwidth_factor": 0.5}]})");
  CHECK(lost > 1.5 * plain);
  CHECK(lost == Approx(half).epsilon(0.1));
}

TEST_CASE("lost NICs must leave every two nodes a rail in common",
          "[models][simulate][variability]") {
  std::string all_of_node_1 = R"(variability={"lost_nics": [)";
  for (int rail = 0; rail < 8; ++rail) {
    all_of_node_1 +=
        (rail ? "," : "") + std::string(R"({"node": 1, "rail": )") + std::to_string(rail) + "}";
  }
  all_of_node_1 += "]}";
  CHECK_THROWS_WITH(example({"num_gpus=16", all_of_node_1}),
                    Catch::Contains("leaves node 1 no NIC"));
  // Node 0 keeps rails 0-3 and node 1 rails 4-7: nothing in common.
  std::string split = R"(variability={"lost_nics": [)";
  for (int rail = 0; rail < 8; ++rail) {
    split += (rail ? "," : "") + std::string(R"({"node": )") + (rail < 4 ? "1" : "0") +
             R"(, "rail": )" + std::to_string(rail) + "}";
  }
  split += "]}";
  CHECK_THROWS_WITH(example({"num_gpus=16", split}),
                    Catch::Contains("leaves nodes 0 and 1 no NIC rail in common"));
  CHECK_THROWS_WITH(example({R"(variability={"lost_nics": [{"node": 0, "rail": 1}]})"}),
                    Catch::Contains("a job on one node"));
  CHECK_THROWS_WITH(
      example({"num_gpus=16", R"(variability={"lost_nics": [{"node": 2, "rail": 1}]})"}),
      Catch::Contains("node = 2"));
}

TEST_CASE("degraded links need a link that exists", "[models][simulate][variability]") {
  CHECK_THROWS_WITH(example({"simulation.fidelity=full",
                             R"(variability={"degraded_links": [{"nic": {"node": 0, "rail": 0},
          "bandwidth_factor": 0.5}]})"}),
                    Catch::Contains("a job on one node"));
  CHECK_THROWS_WITH(example({"simulation.fidelity=full", "num_gpus=16",
                             R"(variability={"degraded_links": [{"nic": {"node": 1, "rail": 8},
          "bandwidth_factor": 0.5}]})"}),
                    Catch::Contains("rail = 8"));
  CHECK_THROWS_WITH(example({"simulation.fidelity=full",
                             R"(variability={"degraded_links": [{"nvlink": {"rank": 2},
          "bandwidth_factor": 0}]})"}),
                    Catch::Contains("bandwidth_factor = 0"));
}
