// Kernel families: an op's label without the numbering of its layer, ring step or piece, so a
// family gathers one kernel's runs over every layer and micro-batch.
#include <map>
#include <regex>
#include <string>

#include "models/step/op_emitter.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

OpTag tag(std::string prefix, std::optional<std::int32_t> layer = std::nullopt,
          bool recompute = false) {
  OpTag t;
  t.microbatch = 3;
  t.layer = layer;
  t.prefix = std::move(prefix);
  t.recompute = recompute;
  return t;
}

}  // namespace

TEST_CASE("a kernel family drops the layer prefix and the numbers in a name",
          "[models][step][kernels]") {
  CHECK(kernel_family(tag("L12", 12), "fc1 fwd") == "fc1 fwd");
  CHECK(kernel_family(tag("L3", 3), "qkv fwd cast a") == "qkv fwd cast a");
  // TP-overlap pieces, CP ring steps and cross-entropy passes are one kernel each.
  CHECK(kernel_family(tag("L0", 0), "fc2 fwd 3 cast a") == "fc2 fwd cast a");
  CHECK(kernel_family(tag("L7", 7), "attn fwd 1") == "attn fwd");
  CHECK(kernel_family(tag("output"), "cross-entropy 2") == "output cross-entropy");
  // Prefixes that are not layers name where the kernel runs; an MTP depth is numbering.
  CHECK(kernel_family(tag("embedding"), "fwd") == "embedding fwd");
  CHECK(kernel_family(tag("mtp0"), "projection fwd") == "mtp projection fwd");
  CHECK(kernel_family(tag("optimizer"), "step") == "optimizer step");
  // Words with digits that are not numbers are names.
  CHECK(kernel_family(tag("L1", 1), "ln2 bwd") == "ln2 bwd");
  // Recomputation stays visible.
  CHECK(kernel_family(tag("L2", 2, true), "fc1 fwd") == "fc1 fwd (recompute)");
}

TEST_CASE("one kernel family gathers a kernel over every layer and micro-batch",
          "[models][step][kernels]") {
  auto config = base_config();
  config["training"]["global_batch"] = 16;  // dp 4: 4 micro-batches per rank
  const StepProgram program = build(config);
  const OpGraph& graph = program.graphs[0];
  std::map<std::string, int> ops_by_family;
  const std::regex layer_word("(^| )L[0-9]+( |$)");
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.shared_op(i);
    if (op.kind != OpKind::kCompute) continue;
    const std::string& family = graph.label(graph.label_family(op.label));
    CAPTURE(graph.label(op.label), family);
    CHECK_FALSE(std::regex_search(family, layer_word));
    ++ops_by_family[family];
  }
  // fc1's forward GEMM runs once per layer and micro-batch: 4 layers × 4 micro-batches.
  CHECK(ops_by_family["fc1 fwd"] == 16);
  CHECK(ops_by_family["attn bwd"] == 16);
  // The optimizer step runs once per step.
  CHECK(ops_by_family["optimizer step"] == 1);
}

TEST_CASE("memory-bound kernels carry the bytes they stream, GEMMs none",
          "[models][step][kernels]") {
  const StepProgram program = build(base_config());
  const OpGraph& graph = program.graphs[0];
  int memory_bound = 0;
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.shared_op(i);
    if (op.kind != OpKind::kCompute) continue;
    CAPTURE(graph.label(op.label));
    if (is(op, OpCategory::kGemm)) {
      CHECK(op.bytes == 0);
    } else if (is(op, OpCategory::kElementwise) || is(op, OpCategory::kOptimizer)) {
      CHECK(op.bytes > 0);
      ++memory_bound;
    }
  }
  CHECK(memory_bound > 0);
}
