// What CUDA graphs reserve beyond eager execution (models/memory.cpp, cuda_graph_bytes;
// docs/reference/cuda_graphs.md).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/activation_memory.hpp"
#include "models/memory.hpp"
#include "models/report_json.hpp"
#include "test_models.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

Layout layout_for(const ModelSpec& m, std::int64_t pp, std::int64_t gpus, const TrainingSpec& t) {
  ParallelSpec p;
  p.pp = pp;
  return make_layout(m, p, t, gpus, "test");
}

StageMemory stage_with(const ModelSpec& m, std::int64_t pp, TrainingSpec t, CudaGraphs graphs,
                       std::int64_t stage = 0) {
  t.cuda_graphs = graphs;
  return memory_report(m, layout_for(m, pp, pp, t), t, 80e9)
      .stages[static_cast<std::size_t>(stage)];
}

}  // namespace

TEST_CASE("per-layer graphs reserve a static input per layer and the pool's working set",
          "[models][memory][cuda_graphs]") {
  // 2 layers, h = 1024, s = 1024, b = 1, tp = 1, one GPU, pp = 1: each layer's graph is replayed
  // for every micro-batch, so one slot per layer. Static inputs: 2 layers x s·h·2 bytes = 4 MiB.
  // The pool's working set: one layer's activations, 34·s·h bytes = 34 MiB (Korthikanti Table 2,
  // flash attention). No optimizer staging: nothing held through the step.
  const ModelSpec m = gpt_model(2, 1024, 16);
  const TrainingSpec t = training(1024, 1, 4);
  const StageMemory eager = stage_with(m, 1, t, CudaGraphs::kNone);
  const StageMemory graphs = stage_with(m, 1, t, CudaGraphs::kPerLayer);
  CHECK(eager.cuda_graphs == 0);
  CHECK(graphs.cuda_graphs == Approx(4 * kMiB + 34 * kMiB));
  // In reserved (and the device's peak), not in allocated.
  CHECK(graphs.allocated == eager.allocated);
  CHECK(graphs.reserved == Approx(eager.reserved + 38 * kMiB));
  CHECK(graphs.peak == Approx(eager.peak + 38 * kMiB));
  // One graph for the whole forward-backward, the batch its only static input: its pool holds
  // what eager execution holds at its peak, and nothing more.
  CHECK(stage_with(m, 1, t, CudaGraphs::kFullIteration).cuda_graphs == 0);
}

TEST_CASE("with a pipeline each micro-batch in flight has its own static inputs",
          "[models][memory][cuda_graphs]") {
  // 4 layers over pp = 2 with 1F1B and 4 micro-batches: stage 0 holds pp - 0 = 2 micro-batches
  // between forward and backward, stage 1 holds one. Static inputs: 2 layers x slots x 2 MiB;
  // working set 34 MiB on both.
  const ModelSpec m = gpt_model(4, 1024, 16);
  const TrainingSpec t = training(1024, 1, 4);
  CHECK(stage_with(m, 2, t, CudaGraphs::kPerLayer, 0).cuda_graphs ==
        Approx(2 * 2 * 2 * kMiB + 34 * kMiB));
  CHECK(stage_with(m, 2, t, CudaGraphs::kPerLayer, 1).cuda_graphs ==
        Approx(2 * 1 * 2 * kMiB + 34 * kMiB));
}

TEST_CASE("a dropless MoE layer's graph holds its attention half, a padded one the whole layer",
          "[models][memory][cuda_graphs]") {
  ModelSpec m = mixtral_8x7b();
  m.layers = 2;
  TrainingSpec t = training(4096, 1, 4);
  ActivationSetting s;
  s.seq_len = 4096;
  const double input = layer_input_bytes(m, s);
  CHECK(input == 4096 * 2.0 * 4096);  // s·h·2 bytes, h = 4096
  // Dropless: the dispatcher and experts run eagerly; the pool's working set is what the
  // attention half saves, below the whole layer's.
  const double attention = attention_part_bytes(m, s, 0);
  CHECK(attention < layer_recompute_transient_bytes(m, s, 0));
  CHECK(stage_with(m, 1, t, CudaGraphs::kPerLayer).cuda_graphs == Approx(2 * input + attention));
  // A capacity factor fixes the shapes: the whole layer is one graph.
  m.moe->capacity_factor = 1.0;
  CHECK(stage_with(m, 1, t, CudaGraphs::kPerLayer).cuda_graphs ==
        Approx(2 * input + layer_recompute_transient_bytes(m, s, 0)));
}

TEST_CASE("wallsim memory --json names the graphs' bytes only when there are some",
          "[models][memory][cuda_graphs]") {
  const ModelSpec m = gpt_model(2, 1024, 16);
  TrainingSpec t = training(1024, 1, 4);
  const Layout layout = layout_for(m, 1, 1, t);
  CHECK_FALSE(
      memory_json(memory_report(m, layout, t, 80e9))["per_stage"][0].contains("cuda_graphs"));
  t.cuda_graphs = CudaGraphs::kPerLayer;
  const MemoryReport report = memory_report(m, layout, t, 80e9);
  CHECK(memory_json(report)["per_stage"][0]["cuda_graphs"] == report.stages[0].cuda_graphs);
  bool noted = false;
  for (const auto& note : report.notes) noted |= note.rfind("CUDA graphs (per_layer)", 0) == 0;
  CHECK(noted);
}
