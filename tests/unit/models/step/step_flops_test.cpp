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

namespace {

const GpuModel& b200() {
  static const GpuModel model = [] {
    const std::string file = std::string(WALLSIM_SOURCE_ROOT) + "/calibration/profiles/b200.json";
    const nlohmann::json root = load_json_file(file);
    return GpuModel(parse_gpu_profile(JsonNode(root.at("gpu"), file, "gpu")));
  }();
  return model;
}

// Bytes of every cast kernel of rank 0's graph.
double cast_bytes(const StepProgram& program) {
  const OpGraph& g = program.graphs[0];
  double total = 0;
  for (OpIndex i : select(g, [&](const Op& op) { return label_has(g, op, " cast "); })) {
    total += g.op(i).bytes;
  }
  return total;
}

json llama_shaped() {
  json doc = base_config();
  doc["model"]["hidden"] = 4096;
  doc["model"]["heads"] = 32;
  doc["model"]["kv_heads"] = 8;
  doc["model"]["ffn_hidden"] = 14336;
  doc["training"]["seq_len"] = 8192;
  return doc;
}

StepProgram build_with(json doc, const std::string& precision, const GpuModel& gpu) {
  doc["training"]["precision"] = precision;
  return build_step(config_from(doc), gpu, Fidelity::kSymmetric);
}

}  // namespace

TEST_CASE("block-scaled recipes cast into row- and column-wise copies with their scales",
          "[models][step]") {
  // models/quantization.hpp: per element of a GEMM input, fp8 per-tensor moves 3 bytes, MXFP8
  // 2 + 2·(1 + 1/32) = 4.0625, NVFP4 2 + 2 + 2·(0.5 + 1/16) = 5.125. The same GEMMs are cast
  // either way, so the casts' bytes scale by those ratios.
  const json doc = llama_shaped();
  const StepProgram fp8 = build_with(doc, "fp8", b200());
  const StepProgram mxfp8 = build_with(doc, "mxfp8", b200());
  const StepProgram nvfp4 = build_with(doc, "nvfp4", b200());
  CHECK(cast_bytes(mxfp8) == Approx(cast_bytes(fp8) * 4.0625 / 3.0).epsilon(1e-6));
  CHECK(cast_bytes(nvfp4) == Approx(cast_bytes(fp8) * 5.125 / 3.0).epsilon(1e-6));
  // NVFP4's GEMMs run at the fp4 rate: faster than MXFP8's, which run at the fp8 rate.
  const auto gemm_time = [](const OpGraph& g) {
    Time total;
    for (OpIndex i = 0; i < g.size(); ++i) {
      if (is(g.op(i), OpCategory::kGemm)) total += g.op(i).duration;
    }
    return total;
  };
  CHECK(gemm_time(nvfp4.graphs[0]) < gemm_time(mxfp8.graphs[0]));
  CHECK(gemm_time(mxfp8.graphs[0]) == gemm_time(fp8.graphs[0]));
}

TEST_CASE("a precision the GPU cannot run is refused with the reason", "[models][step]") {
  json doc = llama_shaped();
  doc["training"]["precision"] = "mxfp8";
  CHECK_THROWS_WITH(build(doc), Catch::Contains("training.precision") && Catch::Contains("mxfp8") &&
                                    Catch::Contains("block-scaled tensor cores") &&
                                    Catch::Contains("compute capability 9.0"));
  doc["training"]["precision"] = "nvfp4";
  CHECK_THROWS_WITH(build(doc), Catch::Contains("nvfp4") && Catch::Contains("Blackwell"));
  doc["training"]["precision"] = "fp8";
  CHECK_NOTHROW(build(doc));
}
