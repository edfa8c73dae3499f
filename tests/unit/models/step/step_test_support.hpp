// Small run configs built in memory, the shipped H100 GPU model, and op queries for the
// step-builder tests.
#pragma once

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/run_config.hpp"
#include "models/step/step_program.hpp"
#include "sim/core/engine.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/graph/replay.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/report/op_category.hpp"

namespace wallsim::models::testing {

// A Llama-style model (GQA, SwiGLU, RMSNorm, untied) small enough to build in milliseconds:
// h 1024, 16 heads over 4 KV heads, f 2816, 4 layers, 8 GPUs as tp 2 × dp 4, s 2048, b 1,
// 8 sequences (one micro-batch per DP rank unless a test changes it).
inline nlohmann::json base_config() {
  return {
      {"model",
       {{"layers", 4},
        {"hidden", 1024},
        {"heads", 16},
        {"kv_heads", 4},
        {"ffn_hidden", 2816},
        {"vocab", 32000},
        {"activation", "swiglu"},
        {"norm", "rmsnorm"},
        {"tied_embeddings", false}}},
      {"cluster", "../clusters/dgx-h100.json"},
      {"num_gpus", 8},
      {"parallel", {{"tp", 2}, {"sequence_parallel", false}, {"pp", 1}}},
      {"training", {{"seq_len", 2048}, {"micro_batch", 1}, {"global_batch", 4}}},
  };
}

inline RunConfig config_from(const nlohmann::json& document) {
  return run_config_from_json(
      document, std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/step-test.json");
}

inline const GpuModel& h100() {
  static const GpuModel model = [] {
    const std::string file =
        std::string(WALLSIM_SOURCE_ROOT) + "/calibration/profiles/h100-sxm.json";
    const nlohmann::json root = load_json_file(file);
    return GpuModel(parse_gpu_profile(JsonNode(root.at("gpu"), file, "gpu")));
  }();
  return model;
}

inline StepProgram build(const nlohmann::json& document, Fidelity fidelity = Fidelity::kSymmetric) {
  return build_step(config_from(document), h100(), fidelity);
}

inline bool is(const Op& op, OpCategory category) {
  return op.category == category_code(category);
}

inline bool label_has(const OpGraph& graph, const Op& op, const std::string& text) {
  return graph.label(op.label).find(text) != std::string::npos;
}

// Ops of `graph` (in program order) that satisfy `keep`.
inline std::vector<OpIndex> select(const OpGraph& graph,
                                   const std::function<bool(const Op&)>& keep) {
  std::vector<OpIndex> chosen;
  for (OpIndex i = 0; i < graph.size(); ++i) {
    if (keep(graph.op(i))) chosen.push_back(i);
  }
  return chosen;
}

// Duration of the first op (in program order) whose label contains `text`; fails the test when
// there is none.
inline Time first_duration(const OpGraph& graph, const std::string& text) {
  for (OpIndex i = 0; i < graph.size(); ++i) {
    if (label_has(graph, graph.op(i), text)) return graph.op(i).duration;
  }
  FAIL("no op labelled '" << text << "'");
  return Time::zero();
}

// Every collective and transfer completes `delay` after it starts.
class FixedDelayComm : public CommService {
 public:
  FixedDelayComm(Engine& engine, Time delay) : engine_(engine), delay_(delay) {}
  void start_collective(GroupIndex, std::uint32_t, Done done) override {
    engine_.schedule_after(delay_, std::move(done));
  }
  void start_transfer(RankIndex, RankIndex, std::uint32_t, Done done) override {
    engine_.schedule_after(delay_, std::move(done));
  }

 private:
  Engine& engine_;
  Time delay_;
};

inline const CommPayload& payload_of(const StepProgram& program, const Op& op) {
  return program.payloads[op.payload];
}

// base_config() as a pipeline of two chunks per stage: pp 4, vpp 2, 8 layers, tp 1, 4 GPUs,
// 8 micro-batches, the named schedule.
inline nlohmann::json two_chunk_config(const std::string& schedule) {
  nlohmann::json doc = base_config();
  doc["model"]["layers"] = 8;
  doc["parallel"] = {{"tp", 1}, {"pp", 4}, {"vpp", 2}};
  doc["num_gpus"] = 4;
  doc["training"]["global_batch"] = 8;
  doc["training"]["schedule"] = schedule;
  return doc;
}

// The peers of `graph`'s transfers of `kind` labelled `label`, in program order.
inline std::vector<RankIndex> peers(const OpGraph& graph, OpKind kind, const std::string& label) {
  std::vector<RankIndex> result;
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.op(i);
    if (op.kind == kind && label_has(graph, op, label)) result.push_back(op.peer);
  }
  return result;
}

// Compute ops whose label contains `text`.
inline std::size_t count_labelled(const OpGraph& graph, const std::string& text) {
  return select(graph,
                [&](const Op& op) {
                  return op.kind == OpKind::kCompute && label_has(graph, op, text);
                })
      .size();
}

}  // namespace wallsim::models::testing
