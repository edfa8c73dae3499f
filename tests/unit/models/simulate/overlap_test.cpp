// End-to-end behaviour of a simulated step: what overlaps with what, read from the replay's
// op records.
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "models/run/simulate.hpp"

using namespace wallsim;
using namespace wallsim::models;
using nlohmann::json;

namespace {

// One layer, tp 8 with sequence parallelism and TE's comm overlap, one micro-batch on 8 GPUs.
json overlap_config(double hidden) {
  return {{"model",
           {{"layers", 1},
            {"hidden", hidden},
            {"heads", 64},
            {"ffn_hidden", 4 * hidden},
            {"vocab", 32000},
            {"activation", "gelu"},
            {"tied_embeddings", false}}},
          {"cluster", "../clusters/dgx-h100.json"},
          {"num_gpus", 8},
          {"parallel", {{"tp", 8}, {"sequence_parallel", true}}},
          {"training",
           {{"seq_len", 4096},
            {"micro_batch", 1},
            {"global_batch", 1},
            {"overlap", {{"tp_comm", true}}}}},
          {"simulation", {{"fidelity", "symmetric"}, {"network", "flow"}}}};
}

SimulationResult simulate_json(json document, double nvlink_GBps) {
  const std::string root = WALLSIM_SOURCE_ROOT;
  RunConfig config = run_config_from_json(document, root + "/configs/examples/test.json");
  config.cluster.nvlink.bandwidth_GBps = nvlink_GBps;
  const Profile profile = load_profile(root + "/calibration/profiles/h100-sxm.json");
  return simulate(config, profile.gpu, profile.comm);
}

std::optional<OpIndex> find(const OpGraph& graph, const std::string& label) {
  for (OpIndex i = 0; i < graph.size(); ++i) {
    if (graph.label(graph.op(i).label) == label) return i;
  }
  return std::nullopt;
}

// How long GEMM piece `piece` of the layer's QKV forward waited after the previous piece
// ended (it may start only once its ring-exchange step has delivered the chunk).
double qkv_piece_wait_s(const SimulationResult& result, int piece) {
  const OpGraph& graph = result.program.graphs[0];
  const auto previous = find(graph, "L0 qkv fwd " + std::to_string(piece - 1));
  const auto current = find(graph, "L0 qkv fwd " + std::to_string(piece));
  REQUIRE(previous);
  REQUIRE(current);
  const auto& records = result.replay.ranks[0].ops;
  return (records[*current].start - records[*previous].end).seconds();
}

}  // namespace

TEST_CASE("an overlapped TP all-gather is hidden when the GEMM piece is longer than the chunk",
          "[models][simulate][overlap]") {
  // hidden 16384, tp 8, 4096 tokens: each of the 8 QKV pieces is 512 x 6144 x 16384
  // (1.0e11 FLOPs, ~130 µs at ~790 TFLOP/s), while its ring step moves S/8 = 4096 x 16384 x 2 / 8
  // = 16 MiB over NVLink (450 GB/s x 0.824 = 371 GB/s: ~45 µs + ~12 µs latency). Each step lands
  // before the previous piece ends, so the pieces run back to back.
  const auto result = simulate_json(overlap_config(16384), 450);
  for (int piece = 1; piece < 8; ++piece) {
    CAPTURE(piece);
    CHECK(qkv_piece_wait_s(result, piece) == Approx(0).margin(1e-9));
  }
}

TEST_CASE("an overlapped TP all-gather is exposed when the chunk takes longer than the GEMM",
          "[models][simulate][overlap]") {
  // Same layer with NVLink cut to 4.5 GB/s (3.7 GB/s effective): a 16 MiB step now takes
  // ~4.5 ms against the ~130 µs piece, so every piece after the first waits ~4.4 ms.
  const auto result = simulate_json(overlap_config(16384), 4.5);
  for (int piece = 2; piece < 8; ++piece) {
    CAPTURE(piece);
    const double chunk_s = 16.0 * (1 << 20) / (4.5e9 * 0.824);
    CHECK(qkv_piece_wait_s(result, piece) > 0.9 * (chunk_s - 200e-6));
  }
  CHECK(result.summary.time.exposed_comm_s[category_slot(OpCategory::kTp)] > 0.01);
}

TEST_CASE("DP gradient buckets reduce during the last micro-batch's backward",
          "[models][simulate][dp]") {
  // 4 layers on tp 1, dp 8, 2 micro-batches: with overlap_grad_reduce the first bucket's
  // reduce-scatter starts before the backward's last GEMM ends; without it, after.
  json document = overlap_config(4096);
  document["model"]["layers"] = 4;
  document["model"]["heads"] = 32;
  document["parallel"] = {{"tp", 1}};
  document["training"]["global_batch"] = 16;
  document["training"]["distributed_optimizer"] = true;
  const auto first_dp_start_and_last_compute_end = [](const SimulationResult& result) {
    const OpGraph& graph = result.program.graphs[0];
    const auto& records = result.replay.ranks[0].ops;
    Time first_dp = Time::max();
    Time last_backward = Time::zero();
    for (OpIndex i = 0; i < graph.size(); ++i) {
      const Op& op = graph.op(i);
      if (op.kind == OpKind::kCollective && op.stream == Streams::kDp &&
          graph.label(op.label).find("grad") != std::string::npos) {
        first_dp = min(first_dp, records[i].start);
      }
      if (op.stream == Streams::kCompute && op.category == 0 /* gemm */) {
        last_backward = max(last_backward, records[i].end);
      }
    }
    return std::make_pair(first_dp, last_backward);
  };
  document["training"]["overlap"] = {{"dp_grad_reduce", true}};
  const auto [overlapped_dp, overlapped_end] =
      first_dp_start_and_last_compute_end(simulate_json(document, 450));
  CHECK(overlapped_dp < overlapped_end);
  document["training"]["overlap"] = {{"dp_grad_reduce", false}};
  const auto [serial_dp, serial_end] =
      first_dp_start_and_last_compute_end(simulate_json(document, 450));
  CHECK(serial_dp >= serial_end);
}

// A middle stage of a V (or of DualPipe) sends activations to both neighbours. On one in-order
// send stream, a send to the next stage that waits for its receiver held up the send to the
// previous stage that the receiver was itself waiting for: with pp 8 the DualPipeV step could
// not finish. Each neighbour's transfers have their own streams (pipeline_ops.hpp), as a batched
// isend/irecv lets them progress, and every schedule finishes with every op run.
TEST_CASE("pipeline transfers with two neighbours do not wait behind each other",
          "[models][simulate][pipeline]") {
  for (const std::string schedule : {"zbv", "dualpipev", "dualpipe"}) {
    for (const std::string fidelity : {"symmetric", "full"}) {
      INFO(schedule << " " << fidelity);
      json doc = overlap_config(1024);
      doc["model"]["layers"] = 16;
      doc["model"]["heads"] = 16;
      doc["num_gpus"] = 16;
      doc["parallel"] = {{"tp", 1}, {"pp", 8}, {"vpp", 2}};
      doc["training"] = {{"seq_len", 1024},
                         {"micro_batch", 1},
                         {"global_batch", 32},
                         {"schedule", schedule},
                         {"recompute", "selective"}};
      doc["simulation"]["fidelity"] = fidelity;
      const SimulationResult result = simulate_json(doc, 450);
      std::size_t ops = 0;
      for (const OpGraph& graph : result.program.graphs) ops += graph.size();
      CHECK(result.replay.invariants.ops_ended == ops);
      CHECK(result.summary.iteration_time_s > 0);
    }
  }
}
