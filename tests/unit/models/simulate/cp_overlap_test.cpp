// Context parallelism's ring exchange in a simulated step: hidden behind the attention blocks
// when a K/V transfer is shorter than a block's attention, exposed when the link is too slow.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

// One layer of a GQA model (h 4096, 32 heads over 8 KV heads, d = 128) at s = 32768 on 2 GPUs
// of one node as cp 2, one micro-batch: s' = 16384 tokens per rank.
json cp_config() {
  return {{"model",
           {{"layers", 1},
            {"hidden", 4096},
            {"heads", 32},
            {"kv_heads", 8},
            {"ffn_hidden", 14336},
            {"vocab", 32000},
            {"activation", "swiglu"},
            {"norm", "rmsnorm"},
            {"tied_embeddings", false}}},
          {"cluster", "../clusters/dgx-h100.json"},
          {"num_gpus", 2},
          {"parallel", {{"tp", 1}, {"cp", 2}, {"cp_comm_type", "p2p"}}},
          {"training", {{"seq_len", 32768}, {"micro_batch", 1}, {"global_batch", 1}}},
          {"simulation", {{"fidelity", "symmetric"}, {"network", "flow"}}}};
}

struct Run {
  double exposed_cp_s = 0;
  double attention_step_s = 0;  // one forward step: half a block (the diagonal, causal)
};

Run simulate_at(double nvlink_GBps) {
  const std::string root = WALLSIM_SOURCE_ROOT;
  RunConfig config = run_config_from_json(cp_config(), root + "/configs/examples/test.json");
  config.cluster.nvlink.bandwidth_GBps = nvlink_GBps;
  const Profile profile = load_profile(root + "/calibration/profiles/h100-sxm.json");
  const SimulationResult result = simulate(config, profile.gpu, profile.comm);
  Run run;
  run.exposed_cp_s = result.summary.time.exposed_comm_s[category_slot(OpCategory::kCp)];
  const GpuModel gpu(profile.gpu);
  // The run's backend is Transformer Engine's default on H100 for head dim 128: cuDNN.
  run.attention_step_s = gpu.attention_forward({1, 32, 8, 16384, 16384, 128, true},
                                               AttentionKernel::kCudnn, profile.gpu.sms)
                             .seconds();
  return run;
}

// K and V of one rank's block: 2 · s' · b · g · d · 2 bytes = 2 · 16384 · 1 · 8 · 128 · 2.
constexpr double kKvBytes = 2.0 * 16384 * 1 * 8 * 128 * 2;

}  // namespace

TEST_CASE("the CP ring's K/V exchange hides behind attention until the link is too slow",
          "[models][simulate][cp]") {
  // mechanics.md §3 (Ring Attention's condition, per step): the transfer of the next block's
  // K and V (kKvBytes over the link) overlaps the current block's attention. With cp 2 the
  // forward's one transfer runs beside the diagonal block (half a block of causal work, T);
  // the backward's two (K, V then dK, dV) beside backward blocks of 2.5 T. The crossover link
  // bandwidth is B* = kKvBytes / T (≈ 67 MB / ~4 ms ≈ 15 GB/s on an H100).
  const double step_s = simulate_at(450).attention_step_s;
  REQUIRE(step_s > 0);
  const double crossover_GBps = kKvBytes / step_s / 1e9;
  CAPTURE(step_s, crossover_GBps);
  // Four times faster than B* (and every link runs below its nominal rate, which only makes
  // the transfer longer, so stay well inside): the ring is hidden.
  const Run fast = simulate_at(4.0 * crossover_GBps / 0.5);
  CHECK(fast.exposed_cp_s < 0.02 * step_s);
  // Four times slower: each transfer takes ≥ 4 T. The forward waits ≥ 3 T for it after the
  // diagonal block, the backward ≥ 1.5 T more: at least 3 T of CP time is exposed.
  const Run slow = simulate_at(crossover_GBps / 4.0);
  CHECK(slow.exposed_cp_s > 3.0 * step_s);
}

TEST_CASE("without overlap the CP ring's transfers are all exposed", "[models][simulate][cp]") {
  // overlap.cp_comm false: each transfer waits for the block before it and the next block waits
  // for the transfer, so even on a fast link the exposed CP time is at least the transfers'
  // own time: 3 transfers of kKvBytes (1 forward, 2 backward) at ≤ the link rate.
  const std::string root = WALLSIM_SOURCE_ROOT;
  json doc = cp_config();
  doc["training"]["overlap"] = {{"cp_comm", false}};
  const RunConfig config = run_config_from_json(doc, root + "/configs/examples/test.json");
  const Profile profile = load_profile(root + "/calibration/profiles/h100-sxm.json");
  const SimulationResult result = simulate(config, profile.gpu, profile.comm);
  const double link_Bps = config.cluster.nvlink.bandwidth_GBps * 1e9;
  CHECK(result.summary.time.exposed_comm_s[category_slot(OpCategory::kCp)] >=
        3.0 * kKvBytes / link_Bps);
}
