// The host in a simulated step: a model of tiny kernels runs at the host's issue rate, CUDA
// graphs lift it, and dropless MoE routing makes the host wait once per MoE layer's forward.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

// Two layers of h = 256 over 128 tokens on one H100: small kernels (the longest, the FC2 GEMM
// of a few waves' worth of tiles, about 0.1 ms).
json tiny_config() {
  return {{"model",
           {{"layers", 2},
            {"hidden", 256},
            {"heads", 4},
            {"ffn_hidden", 1024},
            {"vocab", 1024},
            {"activation", "swiglu"},
            {"norm", "rmsnorm"}}},
          {"cluster", "../clusters/dgx-h100.json"},
          {"num_gpus", 1},
          {"training", {{"seq_len", 128}, {"micro_batch", 1}, {"global_batch", 4}}}};
}

json moe_config() {
  json doc = tiny_config();
  doc["num_gpus"] = 8;
  doc["model"]["moe"] = {{"experts", 8}, {"topk", 2}, {"ffn_hidden", 512}};
  doc["parallel"] = {{"ep", 8}};
  doc["training"]["global_batch"] = 16;
  return doc;
}

const std::string& root() {
  static const std::string path = WALLSIM_SOURCE_ROOT;
  return path;
}

// `issue_us`: the host's cost per eager kernel and per graph; 0 keeps the shipped profile's.
SimulationResult run(const json& document, double issue_us = 0) {
  const RunConfig config = run_config_from_json(document, root() + "/configs/examples/test.json");
  Profile profile = load_profile(root() + "/calibration/profiles/h100-sxm.json");
  if (issue_us > 0) {
    profile.gpu.host.kernel_issue = profile.gpu.host.graph_issue = Time::from_us(issue_us);
  }
  return simulate(config, profile.gpu, profile.comm);
}

// A host that spends 200 us per issue, longer than any kernel of the tiny model.
constexpr double kSlowHostUs = 200;

}  // namespace

TEST_CASE("a step of kernels shorter than their issue cost runs at the host's rate",
          "[models][simulate][host]") {
  // Issued eagerly, op i cannot start before the host has spent (i + 1) · 200 us on ops 0..i;
  // with every kernel shorter than that the GPU always waits, so the step lasts the issue time
  // of all N ops plus the last kernel (the optimizer, tens of us): N · 200 us and a little more.
  const SimulationResult result = run(tiny_config(), kSlowHostUs);
  const double ops = static_cast<double>(result.program.graphs[0].size());
  const double issue_s = ops * kSlowHostUs * 1e-6;
  CHECK(result.summary.iteration_time_s >= issue_s);
  CHECK(result.summary.iteration_time_s < 1.02 * issue_s);
  // Nearly all of it the compute stream spends waiting for the host.
  CHECK(result.summary.time.host_s > 0.5 * result.summary.iteration_time_s);
  CHECK(result.summary.walls.compute.contributor == "host");
}

TEST_CASE("CUDA graphs per layer lift a host-bound step", "[models][simulate][host]") {
  // Each layer's forward or backward becomes one graph, one issue for its ~15 kernels; what
  // stays eager (embedding, loss, optimizer) keeps one issue per kernel. Most of the issues go,
  // so the step shortens and the host's share falls.
  const SimulationResult eager = run(tiny_config(), kSlowHostUs);
  json doc = tiny_config();
  doc["training"]["cuda_graphs"] = "per_layer";
  const SimulationResult graphed = run(doc, kSlowHostUs);
  CHECK(graphed.summary.iteration_time_s < 0.7 * eager.summary.iteration_time_s);
  CHECK(graphed.summary.time.host_s < 0.5 * eager.summary.time.host_s);
  // A whole-iteration graph leaves only the optimizer eager: shorter still.
  doc["training"]["cuda_graphs"] = "full_iteration";
  const SimulationResult whole = run(doc, kSlowHostUs);
  CHECK(whole.summary.iteration_time_s < graphed.summary.iteration_time_s);
}

TEST_CASE("dropless MoE routing makes the host wait once per MoE layer forward",
          "[models][simulate][host][moe]") {
  // Megatron-Core's alltoall dispatcher reads the token counts on the host before the
  // exchange: 2 MoE layers x 2 micro-batches per rank (global batch 16 over dp 8) = 4 waits.
  // With a capacity the buffers are padded to it and the host never waits.
  const auto syncs = [](const SimulationResult& result) {
    const OpGraph& graph = result.program.graphs[0];
    int count = 0;
    for (OpIndex i = 0; i < graph.size(); ++i) count += graph.shared_op(i).host_sync ? 1 : 0;
    return count;
  };
  CHECK(syncs(run(moe_config())) == 4);
  json doc = moe_config();
  doc["model"]["moe"]["capacity_factor"] = 1.0;
  CHECK(syncs(run(doc)) == 0);
}

TEST_CASE("a whole-iteration CUDA graph refuses dropless MoE routing", "[models][simulate][host]") {
  json doc = moe_config();
  doc["training"]["cuda_graphs"] = "full_iteration";
  CHECK_THROWS_AS(run(doc), InputError);
  doc["model"]["moe"]["capacity_factor"] = 1.0;
  CHECK_NOTHROW(run(doc));
}

TEST_CASE("an unfused MoE router costs the host 72 issues per forward, a fused one 31",
          "[models][simulate][host][moe]") {
  // docs/reference/moe.md: the router launches 72 kernels unfused and 31 with router fusion,
  // its GEMM included; the op after the GEMM stands for the rest, issued eagerly at the
  // profile's 10 us each: 71 x 10 = 710 us, fused 30 x 10 = 300 us.
  const auto router_issue_us = [](const SimulationResult& result) {
    const OpGraph& graph = result.program.graphs[0];
    for (OpIndex i = 0; i < graph.size(); ++i) {
      if (graph.label(graph.shared_op(i).label) == "L0 router topk fwd") {
        return graph.shared_op(i).host_cost.seconds() * 1e6;
      }
    }
    return 0.0;
  };
  CHECK(router_issue_us(run(moe_config())) == Approx(710));
  json doc = moe_config();
  doc["model"]["moe"]["router_fusion"] = true;
  CHECK(router_issue_us(run(doc)) == Approx(300));
}
