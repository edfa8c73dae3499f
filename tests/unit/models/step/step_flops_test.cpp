// FLOPs and kernel precision of the step's ops.
#include <catch2/catch.hpp>

#include "models/flops.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// tp 2 × cp 2 × dp 2 × pp 2 on 16 GPUs with 2 virtual chunks, SP.
json mixed_layout() {
  json doc = base_config();
  doc["parallel"] = {{"tp", 2}, {"sequence_parallel", true}, {"cp", 2}, {"pp", 2}, {"vpp", 2}};
  doc["num_gpus"] = 16;
  doc["training"]["global_batch"] = 8;
  return doc;
}

double sum(const std::vector<double>& values) {
  double total = 0;
  for (double v : values) total += v;
  return total;
}

}  // namespace

TEST_CASE("model FLOPs of every rank sum to Megatron's FLOPs per iteration", "[models][step]") {
  const RunConfig config = config_from(mixed_layout());
  const StepProgram program = build_step(config, h100(), Fidelity::kFull);
  REQUIRE(program.model_flops.size() == 16);
  const double expected = model_flops_per_iteration(config.model, config.training.seq_len,
                                                    config.training.global_batch, 2);
  CHECK(sum(program.model_flops) == Approx(expected).epsilon(1e-9));
}

TEST_CASE("full recompute adds exactly one forward of every layer to the hardware FLOPs",
          "[models][step]") {
  // The re-run forward repeats every GEMM and the attention forward, which flops.hpp counts
  // as a third of the layer's model FLOPs (recompute_flops_per_iteration).
  json doc = mixed_layout();
  const StepProgram plain = build(doc, Fidelity::kFull);
  doc["training"]["recompute"] = "full";
  const RunConfig config = config_from(doc);
  const StepProgram full = build_step(config, h100(), Fidelity::kFull);
  CHECK(sum(full.hardware_flops) - sum(plain.hardware_flops) ==
        Approx(recompute_flops_per_iteration(config.model, config.training, 2)).epsilon(1e-9));
  CHECK(sum(full.model_flops) == Approx(sum(plain.model_flops)).epsilon(1e-12));
}

TEST_CASE("hardware FLOPs exceed model FLOPs by flash attention's half extra backward",
          "[models][step]") {
  // GEMM FLOPs agree exactly; attention backward counts 2.5× its forward in the kernels
  // (FlashAttention's convention) against Megatron's 2×, so hardware − model = 0.5 × the
  // attention forward FLOPs = (1/6) of the core-attention model FLOPs.
  const RunConfig config = config_from(mixed_layout());
  const StepProgram program = build_step(config, h100(), Fidelity::kFull);
  const FlopsBreakdown model =
      model_flops_breakdown(config.model, config.training.seq_len, config.training.global_batch, 2);
  CHECK(sum(program.hardware_flops) - sum(program.model_flops) ==
        Approx(model.attention_core / 6.0).epsilon(1e-9));
}

TEST_CASE("selective recompute re-runs core attention before its backward", "[models][step]") {
  json doc = base_config();
  doc["training"]["recompute"] = "selective";
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const auto again = select(g, [&](const Op& op) { return label_has(g, op, "(recompute)"); });
  // 4 layers × 1 micro-batch, one attention forward each.
  REQUIRE(again.size() == 4);
  for (OpIndex i : again) {
    CHECK(is(g.op(i), OpCategory::kAttention));
    CHECK(label_has(g, g.op(i + 1), "attn bwd"));
  }
}

TEST_CASE("full recompute re-runs each layer's forward with its TP collectives", "[models][step]") {
  json doc = base_config();
  doc["training"]["recompute"] = "full";
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const auto again = select(g, [&](const Op& op) {
    return op.kind == OpKind::kCollective && label_has(g, op, "(recompute)");
  });
  CHECK(again.size() == 4 * 2);  // 2 forward all-reduces per layer, 4 layers
}

TEST_CASE("fp8 runs GEMMs faster and casts each GEMM input first", "[models][step]") {
  json doc = base_config();
  doc["model"]["hidden"] = 4096;
  doc["model"]["heads"] = 32;
  doc["model"]["kv_heads"] = 8;
  doc["model"]["ffn_hidden"] = 14336;
  doc["training"]["seq_len"] = 8192;
  const StepProgram bf16 = build(doc);
  doc["training"]["precision"] = "fp8";
  const StepProgram fp8 = build(doc);
  const auto gemm_time = [](const OpGraph& g) {
    Time total;
    for (OpIndex i = 0; i < g.size(); ++i) {
      if (is(g.op(i), OpCategory::kGemm)) total += g.op(i).duration;
    }
    return total;
  };
  CHECK(gemm_time(fp8.graphs[0]) < gemm_time(bf16.graphs[0]));
  const OpGraph& g = fp8.graphs[0];
  const auto gemms = select(g, [](const Op& op) { return is(op, OpCategory::kGemm); });
  const auto casts = select(g, [&](const Op& op) { return label_has(g, op, " cast "); });
  CHECK(casts.size() == 2 * gemms.size());
  for (OpIndex i : casts) CHECK(is(g.op(i), OpCategory::kElementwise));
  // Attention stays in bf16: the same kernels either way.
  const auto attention = [](const OpGraph& graph) {
    return select(graph, [](const Op& op) { return is(op, OpCategory::kAttention); }).size();
  };
  CHECK(attention(g) == attention(bf16.graphs[0]));
}

TEST_CASE("every op has a category, a label and positive compute time", "[models][step]") {
  const StepProgram program = build(mixed_layout());
  for (const OpGraph& g : program.graphs) {
    for (OpIndex i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      CHECK(op.category < kOpCategoryCount);
      CHECK_FALSE(g.label(op.label).empty());
      if (op.kind == OpKind::kCompute) CHECK(op.duration > Time::zero());
    }
  }
}

TEST_CASE("the same config builds the same program twice", "[models][step]") {
  const StepProgram a = build(mixed_layout());
  const StepProgram b = build(mixed_layout());
  REQUIRE(a.graphs.size() == b.graphs.size());
  for (std::size_t r = 0; r < a.graphs.size(); ++r) {
    REQUIRE(a.graphs[r].size() == b.graphs[r].size());
    for (OpIndex i = 0; i < a.graphs[r].size(); ++i) {
      CHECK(a.graphs[r].label(a.graphs[r].op(i).label) ==
            b.graphs[r].label(b.graphs[r].op(i).label));
      CHECK(a.graphs[r].op(i).duration == b.graphs[r].op(i).duration);
    }
  }
}
