// Activation offloading in a simulated step (training.offload.activations,
// models/step/pipeline_ops.hpp): the copies hide behind compute on a fast host link, show as
// exposed offload time on a slow one, and the activation peak falls. The CPU optimizer
// (training.offload.optimizer_fraction) at the end of the step.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/op_category.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

// Eight layers of h = 2048 over 4096 tokens on one H100, four micro-batches of gradient
// accumulation: each layer saves ~0.3 GB and computes for ~1 ms forward.
json offload_config(bool offload) {
  return {{"model",
           {{"layers", 8},
            {"hidden", 2048},
            {"heads", 16},
            {"ffn_hidden", 8192},
            {"vocab", 32000},
            {"activation", "swiglu"},
            {"norm", "rmsnorm"}}},
          {"cluster", "../clusters/dgx-h100.json"},
          {"num_gpus", 1},
          {"training",
           {{"seq_len", 4096},
            {"micro_batch", 1},
            {"global_batch", 4},
            {"offload", {{"activations", offload}}}}}};
}

// `host_link_GBps`: the cluster's GPU <-> host rate (DGX H100: 64 GB/s).
SimulationResult run(const json& document, double host_link_GBps = 64) {
  const std::string root = WALLSIM_SOURCE_ROOT;
  const RunConfig config =
      run_config_from_json(document, root + "/configs/examples/test.json",
                           {"cluster.node.host_link_GBps=" + std::to_string(host_link_GBps)});
  return simulate(config);
}

double exposed_offload(const SimulationResult& r) {
  return r.summary.time
      .exposed_comm_s[static_cast<std::size_t>(category_slot(OpCategory::kOffload))];
}

}  // namespace

TEST_CASE("offloaded activations hide behind compute on a fast host link and show on a slow one",
          "[models][simulate][offload]") {
  const SimulationResult plain = run(offload_config(false));
  const SimulationResult fast = run(offload_config(true), 1e4);
  const SimulationResult slow = run(offload_config(true), 1);
  // 10 TB/s: a layer's ~0.3 GB moves in ~30 µs, well inside the next layer's compute.
  CHECK(fast.summary.time.step_s == Approx(plain.summary.time.step_s).epsilon(0.01));
  CHECK(exposed_offload(fast) < 0.01 * fast.summary.time.step_s);
  // 1 GB/s: every copy takes ~0.3 s, far longer than a layer, so the backward waits for them.
  CHECK(slow.summary.time.step_s > 2 * plain.summary.time.step_s);
  CHECK(exposed_offload(slow) > 0.5 * (slow.summary.time.step_s - plain.summary.time.step_s));
  CHECK(exposed_offload(plain) == 0);
}

TEST_CASE("offloading keeps a chunk's last layer per micro-batch on the GPU plus two in transit",
          "[models][simulate][offload]") {
  const SimulationResult plain = run(offload_config(false));
  const SimulationResult fast = run(offload_config(true), 1e4);
  const SimulationResult pcie = run(offload_config(true));
  json seven = offload_config(false);
  seven["model"]["layers"] = 7;
  const auto& p = plain.summary.per_stage[0];
  const auto& f = fast.summary.per_stage[0];
  // One layer's bytes: eight layers' activations less seven's.
  const double layer = p.activations - run(seven).summary.per_stage[0].activations;
  REQUIRE(layer > 0);
  // Without offloading one micro-batch (pp = 1) keeps all eight layers; with it, the last
  // layer plus two in transit: five layers fewer in the analytical peak.
  CHECK(f.activations == Approx(p.activations - 5 * layer));
  // When the copies keep pace with compute the replay holds no more than that, far less than
  // without offloading.
  CHECK(f.simulated_activations <= f.activations * (1 + 1e-9));
  CHECK(f.simulated_activations < 0.6 * p.simulated_activations);
  // At PCIe's 64 GB/s a layer's copy (~0.3 GB, ~5 ms) outlasts its forward: copies queue and
  // free their layers late, so the replay holds more than the analytical peak, still less than
  // without offloading.
  const auto& q = pcie.summary.per_stage[0];
  CHECK(q.simulated_activations > f.simulated_activations);
  CHECK(q.simulated_activations < p.simulated_activations);
}

TEST_CASE("offloading a module list moves only what those modules save",
          "[models][simulate][offload]") {
  // core_attn saves Q, K and V: 16 heads of 128 for Q and as many for K and V (no GQA here),
  // 2 bytes each, 4096 tokens: 4096 · 2 · (2048 + 4096) = 50,331,648 bytes per layer. Seven of
  // the eight layers leave them on the host, two are in transit: 5 · 50,331,648 fewer.
  const SimulationResult plain = run(offload_config(false));
  json doc = offload_config(true);
  doc["training"]["offload"] = {{"activations", json::array({"core_attn"})}};
  const SimulationResult core = run(doc, 1e4);
  const double per_layer = 4096.0 * 2 * (2048 + 4096);
  const auto& p = plain.summary.per_stage[0];
  const auto& c = core.summary.per_stage[0];
  CHECK(c.activations == Approx(p.activations - 5 * per_layer).epsilon(1e-12));
  // The replay holds no more than the analytical peak with the backward's transient gradients
  // (the output layer's placeholder, which meets more kept activations than with whole layers).
  CHECK(c.simulated_activations <= (c.activations + c.grad_transients) * (1 + 1e-9));
  CHECK(c.simulated_activations < p.simulated_activations);
  // Adding the projection's input (the attention output, 2 bytes · 2048 per token) offloads
  // 4096 · 2 · 2048 more per layer.
  doc["training"]["offload"] = {{"activations", json::array({"core_attn", "attn_proj"})}};
  const SimulationResult both = run(doc, 1e4);
  CHECK(both.summary.per_stage[0].activations ==
        Approx(c.activations - 5 * 4096.0 * 2 * 2048).epsilon(1e-12));
  // Less to copy, less exposed on a slow link than whole layers.
  CHECK(exposed_offload(run(doc, 1)) < exposed_offload(run(offload_config(true), 1)));
}

TEST_CASE("offloading only the first layers keeps the rest on the GPU",
          "[models][simulate][offload]") {
  // offload.layers 3 of the 8: layers 0-2 leave, 3-7 stay; with two in transit the peak is
  // eight layers less one, against five less with every layer but the last offloaded.
  const SimulationResult plain = run(offload_config(false));
  const SimulationResult all = run(offload_config(true), 1e4);
  json doc = offload_config(true);
  doc["training"]["offload"]["layers"] = 3;
  const SimulationResult three = run(doc, 1e4);
  const double layer =
      (plain.summary.per_stage[0].activations - all.summary.per_stage[0].activations) / 5;
  CHECK(three.summary.per_stage[0].activations ==
        Approx(plain.summary.per_stage[0].activations - layer).epsilon(1e-12));
  CHECK(three.summary.per_stage[0].simulated_activations <
        plain.summary.per_stage[0].simulated_activations);
  // Fewer copies: less exposed on a slow link.
  CHECK(exposed_offload(run(doc, 1)) < exposed_offload(run(offload_config(true), 1)));
  // A count of whole layers: not with a module list.
  doc["training"]["offload"] = {{"activations", json::array({"core_attn"})}, {"layers", 3}};
  CHECK_THROWS_WITH(run(doc), Catch::Contains("counts whole layers"));
}

TEST_CASE("offloading refuses the paths it is not built for", "[models][simulate][offload]") {
  json doc = offload_config(true);
  doc["training"]["offload"] = {{"activations", json::array({"attn_proj"})}};
  CHECK_THROWS_WITH(run(doc), Catch::Contains("attn_proj needs core_attn"));
  doc["training"]["offload"] = {{"activations", json::array({"expert_fc1"})}};
  CHECK_THROWS_WITH(run(doc), Catch::Contains("the model has no MoE layers"));
  doc["training"]["offload"] = {{"activations", json::array()}};
  CHECK_THROWS_WITH(run(doc), Catch::Contains("must name at least one module"));
  doc["training"]["offload"] = {{"activations", json::array({"core_attn", "core_attn"})}};
  CHECK_THROWS_WITH(run(doc), Catch::Contains("is listed twice"));
  doc["training"]["offload"] = {{"activations", json::array({"softmax"})}};
  CHECK_THROWS_AS(run(doc), InputError);
}

TEST_CASE("the CPU optimizer adds its copies and AdamW's host time to the end of the step",
          "[models][simulate][offload]") {
  json doc = offload_config(false);
  doc["training"]["distributed_optimizer"] = true;
  doc["training"]["optimizer"] = {{"precision_aware", true}};
  const SimulationResult plain = run(doc);
  doc["training"]["offload"] = {{"optimizer_fraction", 1.0}};
  const SimulationResult cpu = run(doc);
  doc["training"]["offload"]["optimizer_overlap"] = true;
  const SimulationResult overlapped = run(doc);
  const auto seconds = [](const SimulationResult& r, const std::string& text) {
    const OpGraph& g = r.program.graphs[0];
    double s = 0;
    for (OpIndex i = 0; i < g.size(); ++i) {
      if (g.label(g.op(i).label).find(text) != std::string::npos) s += g.op(i).duration.seconds();
    }
    return s;
  };
  // One GPU, everything on the CPU, nothing after the optimizer: the step grows by the gradient
  // copies, AdamW on the CPU and the parameter copies, one after the other, less the GPU's fused
  // step it no longer runs.
  const double added = seconds(cpu, "gradients to host") + seconds(cpu, "cpu adam") +
                       seconds(cpu, "parameters to device") - seconds(plain, "step");
  REQUIRE(added > 0);
  CHECK(cpu.summary.time.step_s - plain.summary.time.step_s == Approx(added).epsilon(1e-3));
  // Overlapped, the copies hide behind the CPU steps except for the pipeline's ends.
  CHECK(overlapped.summary.time.step_s < cpu.summary.time.step_s);
  CHECK(overlapped.summary.time.step_s - plain.summary.time.step_s >
        seconds(cpu, "cpu adam") - seconds(plain, "step"));
}
