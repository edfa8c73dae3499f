// The output layer's cross-entropy as the memory-bound kernels of training.cross_entropy_fusion
// (models/cross_entropy.hpp), and the embedding's dense table gradient.
#include <catch2/catch.hpp>

#include "models/cross_entropy.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

double forward_bytes(CrossEntropyFusion fusion) {
  double total = 0;
  for (const LogitPass& pass : cross_entropy_kernels(fusion).forward) total += pass.bytes_per_logit;
  return total;
}

double backward_bytes(CrossEntropyFusion fusion) {
  double total = 0;
  for (const LogitPass& pass : cross_entropy_kernels(fusion).backward) {
    total += pass.bytes_per_logit;
  }
  return total;
}

json with_fusion(const std::string& fusion) {
  json doc = base_config();
  doc["training"]["cross_entropy_fusion"] = fusion;
  return doc;
}

// Sum of the durations of the ops whose label contains `text`, on the first graph.
Time total(const StepProgram& program, const std::string& text) {
  const OpGraph& graph = program.graphs[0];
  Time sum = Time::zero();
  for (OpIndex i : select(graph, [&](const Op& op) { return label_has(graph, op, text); })) {
    sum += graph.op(i).duration;
  }
  return sum;
}

}  // namespace

TEST_CASE("unfused cross-entropy moves 38 bytes per logit forward and 14 backward",
          "[models][step][cross_entropy]") {
  // Megatron's vocab_parallel_cross_entropy: .float() reads 2 and writes 4; max reads 4; the
  // in-place subtraction, exp and division read and write 4 each (3 × 8); the sum reads 4.
  CHECK(forward_bytes(CrossEntropyFusion::kNone) == 6 + 4 + 8 + 8 + 4 + 8);
  CHECK(cross_entropy_kernels(CrossEntropyFusion::kNone).forward.size() == 6);
  // Backward: scale the fp32 softmax in place (8), then autograd's cast to bf16 (4 + 2).
  CHECK(backward_bytes(CrossEntropyFusion::kNone) == 8 + 6);
  // Megatron's fusion merges the cast with the max and the loss with the division.
  CHECK(forward_bytes(CrossEntropyFusion::kNative) == 10 + 8 + 4 + 8);
  // Transformer Engine: one online-softmax read of the bf16 logits; the backward rewrites them.
  CHECK(forward_bytes(CrossEntropyFusion::kTe) == 2);
  CHECK(backward_bytes(CrossEntropyFusion::kTe) == 4);
}

TEST_CASE("every cross-entropy pass is one memory-bound kernel over this rank's logits",
          "[models][step][cross_entropy]") {
  // base_config: s 2048, b 1, vocab 32000 over tp 2 → 2048 · 16000 logits on each rank.
  const double logits = 2048.0 * 16000.0;
  const int sms = h100().profile().sms;
  for (const std::string fusion : {"none", "native", "te"}) {
    const StepProgram program = build(with_fusion(fusion));
    const auto kernels = cross_entropy_kernels(*cross_entropy_fusion_from_name(fusion));
    Time expected = Time::zero();
    for (const LogitPass& pass : kernels.forward) {
      expected += h100().memory_bound(pass.bytes_per_logit * logits, sms);
    }
    for (const LogitPass& pass : kernels.backward) {
      expected += h100().memory_bound(pass.bytes_per_logit * logits, sms);
    }
    INFO(fusion);
    CHECK(total(program, "cross-entropy") == expected);
  }
}

TEST_CASE("the cross-entropy all-reduces per token over TP: three unfused, two fused",
          "[models][step][cross_entropy]") {
  const auto collectives = [](const std::string& fusion) {
    const StepProgram program = build(with_fusion(fusion));
    const OpGraph& graph = program.graphs[0];
    return select(graph, [&](const Op& op) {
      return op.kind == OpKind::kCollective && label_has(graph, op, "cross-entropy");
    });
  };
  // One micro-batch per rank: the forward's collectives.
  CHECK(collectives("none").size() == 3);
  CHECK(collectives("native").size() == 2);
  // Transformer Engine gathers max, sum and target logit (12 bytes per token) once.
  const StepProgram te = build(with_fusion("te"));
  const auto gathers = collectives("te");
  REQUIRE(gathers.size() == 1);
  const CommPayload& payload = payload_of(te, te.graphs[0].op(gathers[0]));
  CHECK(payload.op == CollectiveOp::kAllGather);
  CHECK(payload.bytes == 12.0 * 2048 * 2);
}

TEST_CASE("the embedding gradient zero-fills its table shard and adds it to the main gradient",
          "[models][step][cross_entropy]") {
  // Table shard 16000 × 1024 on each TP rank: zero-fill 2 bytes per element; the hook's
  // main_grad.add_(grad) reads 4 + 2 and writes 4 with the fp32 gradient buffer.
  const double table = 16000.0 * 1024.0;
  const int sms = h100().profile().sms;
  const StepProgram program = build(base_config());
  CHECK(first_duration(program.graphs[0], "embedding grad zero") ==
        h100().memory_bound(2 * table, sms));
  CHECK(first_duration(program.graphs[0], "embedding main grad add") ==
        h100().memory_bound(10 * table, sms));
  json bf16 = base_config();
  bf16["training"]["grad_reduce_dtype"] = "bf16";
  CHECK(first_duration(build(bf16).graphs[0], "embedding main grad add") ==
        h100().memory_bound(6 * table, sms));
}

TEST_CASE("cross_entropy_fusion refuses unknown names", "[models][step][cross_entropy]") {
  CHECK_THROWS_WITH(config_from(with_fusion("liger")),
                    Catch::Contains("training.cross_entropy_fusion") && Catch::Contains("te"));
}
