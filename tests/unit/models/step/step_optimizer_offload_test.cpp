// The hybrid CPU optimizer (training.offload.optimizer_fraction, models/optimizer_offload.hpp):
// its copies and CPU step in the step graph, its memory, and the configurations it refuses.
#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "models/optimizer_offload.hpp"
#include "models/step/step_program.hpp"
#include "sim/core/input_error.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using nlohmann::json;

namespace {

// h 2048, f 8192 (GeLU), tied embeddings, V 32000, 2 layers, tp 1, dp 8 with the distributed
// (precision-aware) optimizer: 166,209,536 parameters on the rank (step_data_parallel_test.cpp
// counts them), a shard of 166,209,536 / 8 = 20,776,192.
constexpr double kShard = 166'209'536.0 / 8;

json offload_config(double fraction, bool overlap = false) {
  json doc = base_config();
  doc["model"] = {{"layers", 2},        {"hidden", 2048},         {"heads", 16},
                  {"ffn_hidden", 8192}, {"vocab", 32000},         {"activation", "gelu"},
                  {"norm", "rmsnorm"},  {"tied_embeddings", true}};
  doc["parallel"] = {{"tp", 1}};
  doc["num_gpus"] = 8;
  doc["training"]["global_batch"] = 16;
  doc["training"]["distributed_optimizer"] = true;
  doc["training"]["optimizer"] = {{"precision_aware", true}};
  doc["training"]["overlap"] = {{"dp_grad_reduce", true}, {"dp_param_gather", false}};
  if (fraction > 0) {
    doc["training"]["offload"] = {{"optimizer_fraction", fraction}};
    if (overlap) doc["training"]["offload"]["optimizer_overlap"] = true;
  }
  return doc;
}

std::vector<OpIndex> labelled(const OpGraph& g, const char* text) {
  return select(g, [&](const Op& op) { return label_has(g, op, text); });
}

double total_bytes(const OpGraph& g, const std::vector<OpIndex>& ops) {
  double bytes = 0;
  for (OpIndex i : ops) bytes += g.op(i).bytes;
  return bytes;
}

double total_seconds(const OpGraph& g, const std::vector<OpIndex>& ops) {
  double s = 0;
  for (OpIndex i : ops) s += g.op(i).duration.seconds();
  return s;
}

bool depends_on(const OpGraph& g, OpIndex op, OpIndex on) {
  for (OpIndex dep : g.dependencies(op)) {
    if (dep == on) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("the CPU optimizer copies gradients out, steps on the CPU and copies parameters back",
          "[models][step][offload]") {
  const StepProgram plain = build(offload_config(0));
  const StepProgram half = build(offload_config(0.5));
  const OpGraph& g = half.graphs[0];
  const double params = 0.5 * kShard;  // 10,388,096 parameters on the CPU
  // DGX H100: PCIe Gen5 x16 at 64 GB/s per direction; 563.2 GB/s of host DRAM shared by 8 GPUs.
  const double link = 64e9;
  const double dram = 563.2e9 / 8;
  const auto out = labelled(g, "gradients to host");
  const auto cpu = labelled(g, "cpu adam");
  const auto back = labelled(g, "parameters to device");
  REQUIRE(out.size() == 1);
  REQUIRE(cpu.size() == 1);
  REQUIRE(back.size() == 1);
  // fp32 main gradients out, bf16 parameters back; AdamW streams 80 bytes per parameter.
  CHECK(g.op(out[0]).bytes == Approx(4 * params));
  CHECK(g.op(out[0]).duration.seconds() == Approx(4 * params / link).epsilon(1e-6));
  CHECK(g.op(cpu[0]).duration.seconds() == Approx(80 * params / dram).epsilon(1e-6));
  CHECK(g.op(back[0]).bytes == Approx(2 * params));
  CHECK(g.op(back[0]).duration.seconds() == Approx(2 * params / link).epsilon(1e-6));
  // Without overlap the copies run on the compute stream, the CPU step on its own.
  CHECK(g.op(out[0]).stream == Streams::kCompute);
  CHECK(g.op(back[0]).stream == Streams::kCompute);
  CHECK(g.op(cpu[0]).stream == Streams::kOptimizerOffload);
  CHECK(depends_on(g, cpu[0], out[0]));
  CHECK(depends_on(g, back[0], cpu[0]));
  // The GPU steps the other half: its fused kernel streams half the bytes.
  const auto gpu_step = labelled(g, "step");
  const auto plain_step = labelled(plain.graphs[0], "step");
  const auto kernel = [&](const OpGraph& graph, const std::vector<OpIndex>& ops) {
    for (OpIndex i : ops) {
      if (is(graph.op(i), OpCategory::kOptimizer)) return graph.op(i).bytes;
    }
    FAIL("no optimizer kernel");
    return 0.0f;
  };
  CHECK(kernel(g, gpu_step) == Approx(0.5 * kernel(plain.graphs[0], plain_step)));
  // Every parameter all-gather waits for the parameters to be back.
  const auto gathers = select(g, [&](const Op& op) {
    return op.kind == OpKind::kCollective && label_has(g, op, "param ag");
  });
  REQUIRE(!gathers.empty());
  for (OpIndex gather : gathers) CHECK(depends_on(g, gather, back[0]));
}

TEST_CASE("with the copies overlapped the CPU optimizer pipelines one piece per parameter unit",
          "[models][step][offload]") {
  const StepProgram program = build(offload_config(1, true));
  const OpGraph& g = program.graphs[0];
  const auto out = labelled(g, "gradients to host");
  const auto cpu = labelled(g, "cpu adam");
  const auto back = labelled(g, "parameters to device");
  REQUIRE(out.size() > 1);
  REQUIRE(cpu.size() == out.size());
  REQUIRE(back.size() == out.size());
  // The pieces add up to the whole shard; fraction 1 leaves no GPU kernel.
  CHECK(total_bytes(g, out) == Approx(4 * kShard));
  CHECK(total_bytes(g, back) == Approx(2 * kShard));
  CHECK(total_seconds(g, cpu) == Approx(80 * kShard / (563.2e9 / 8)).epsilon(1e-6));
  CHECK(select(g, [&](const Op& op) { return is(op, OpCategory::kOptimizer); }).empty());
  for (std::size_t k = 0; k < out.size(); ++k) {
    CHECK(g.op(out[k]).stream == Streams::kOffloadOut);
    CHECK(g.op(cpu[k]).stream == Streams::kOptimizerOffload);
    CHECK(g.op(back[k]).stream == Streams::kOffloadIn);
    CHECK(depends_on(g, cpu[k], out[k]));
    CHECK(depends_on(g, back[k], cpu[k]));
  }
}

TEST_CASE("the offloaded optimizer state leaves the GPU for host memory",
          "[models][memory][offload]") {
  const RunConfig plain = config_from(offload_config(0));
  const RunConfig quarter = config_from(offload_config(0.25));
  const StageMemory a = memory_report(plain.model, plain.layout, plain.training, 80e9).stages[0];
  const StageMemory b =
      memory_report(quarter.model, quarter.layout, quarter.training, 80e9).stages[0];
  CHECK(b.optimizer == Approx(0.75 * a.optimizer));
  CHECK(a.host_optimizer == 0);
  // fp32 master weight, gradient copy, exp_avg and exp_avg_sq: 16 bytes per offloaded parameter.
  CHECK(b.host_optimizer == Approx(16 * 0.25 * kShard));
  CHECK(b.weights == a.weights);
  CHECK(b.grads == a.grads);
}

TEST_CASE("the CPU optimizer is refused where it is not modelled or Megatron refuses it",
          "[models][offload]") {
  json doc = offload_config(0.5);
  doc["training"].erase("optimizer");
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("--use-precision-aware-optimizer"));
  doc = offload_config(0.5);
  doc["cluster"] = "../clusters/dgx-a100.json";
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("set node.host_memory_GBps"));
  doc = offload_config(0);
  doc["training"]["offload"] = {{"optimizer_overlap", true}};
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("optimizer_fraction > 0"));
  doc = offload_config(0);
  doc["training"]["offload"] = {{"optimizer_fraction", 1.5}};
  CHECK_THROWS_AS(config_from(doc), InputError);
  doc = offload_config(0.5);
  doc["parallel"]["data_sharding"] = "params";
  doc["training"].erase("distributed_optimizer");
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("not with sharded"));
}

TEST_CASE("the chunked state offload stages masters and moments back for the GPU's step",
          "[models][step][offload]") {
  // Precision-aware state: 2-byte master remainders and fp32 moments (8 bytes) per parameter.
  json doc = offload_config(0);
  doc["training"]["offload"] = {{"optimizer_states", 1.0}, {"optimizer_state_chunk_mb", 16}};
  const StepProgram program = build(doc);
  const OpGraph& g = program.graphs[0];
  const double link = 64e9;  // DGX H100's PCIe Gen5 x16 per direction
  const auto masters = labelled(g, "optimizer masters to device");
  REQUIRE(masters.size() == 1);
  CHECK(g.op(masters[0]).bytes == Approx(2 * kShard));
  CHECK(g.op(masters[0]).duration.seconds() == Approx(2 * kShard / link).epsilon(1e-6));
  // 8 · 20,776,192 bytes of moments in chunks of at most 16 MiB: ceil(166.2 MB / 16.8 MB) = 10.
  const auto in = labelled(g, "optimizer state to device");
  const auto out = select(g, [&](const Op& op) {
    return label_has(g, op, "optimizer state to host") && op.stream == Streams::kOffloadOut;
  });
  REQUIRE(in.size() == 10);
  REQUIRE(out.size() == 10);
  CHECK(total_bytes(g, in) == Approx(8 * kShard));
  // Two staging windows: chunk k comes in only after chunk k − 2 went out.
  for (std::size_t k = 2; k < in.size(); ++k) CHECK(depends_on(g, in[k], out[k - 2]));
  // One fused step per chunk, together the whole shard's bytes.
  const auto steps = select(g, [&](const Op& op) { return is(op, OpCategory::kOptimizer); });
  CHECK(steps.size() == 10);
  const StepProgram plain = build(offload_config(0));
  const auto plain_step =
      select(plain.graphs[0], [&](const Op& op) { return is(op, OpCategory::kOptimizer); });
  REQUIRE(plain_step.size() == 1);
  CHECK(total_bytes(g, steps) == Approx(plain.graphs[0].op(plain_step[0]).bytes));
  // The masters return at the end, freeing their window.
  const auto back = select(g, [&](const Op& op) {
    return label_has(g, op, "optimizer state to host") && op.stream == Streams::kOptimizerOffload;
  });
  REQUIRE(back.size() == 1);
  CHECK(g.op(back[0]).bytes == Approx(2 * kShard));
  CHECK(g.op(back[0]).free_bytes == Approx(2 * kShard));
}

TEST_CASE("staged optimizer state leaves the GPU between steps and sets a peak of its own",
          "[models][memory][offload]") {
  const auto stage = [](const json& doc) {
    const RunConfig c = config_from(doc);
    return memory_report(c.model, c.layout, c.training, 80e9).stages[0];
  };
  const StageMemory plain = stage(offload_config(0));
  json doc = offload_config(0);
  doc["training"]["offload"] = {{"optimizer_states", 0.5}};
  const StageMemory half = stage(doc);
  CHECK(half.optimizer == Approx(0.5 * plain.optimizer));
  // Host copies in their own dtypes: 10 bytes per parameter of the offloaded half.
  CHECK(half.host_optimizer == Approx(10 * 0.5 * kShard));
  // Without chunks the whole offloaded state comes back for the step.
  CHECK(half.optimizer_staging == Approx(10 * 0.5 * kShard));
  doc["training"]["offload"]["optimizer_state_chunk_mb"] = 16;
  // Masters' window (2 bytes each) and two 16 MiB windows of moments.
  CHECK(stage(doc).optimizer_staging == Approx(2 * 0.5 * kShard + 2 * 16 * 1024 * 1024.0));
}

TEST_CASE("the chunked state offload is refused where Megatron refuses it", "[models][offload]") {
  json doc = offload_config(0);
  doc["training"]["offload"] = {{"optimizer_states", 1.0}, {"optimizer_fraction", 0.5}};
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("exclude each other"));
  doc["training"]["offload"] = {{"optimizer_state_chunk_mb", 64}};
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("optimizer_states > 0"));
  doc["training"]["offload"] = {{"optimizer_states", 1.0}};
  doc["training"]["distributed_optimizer"] = false;
  doc["training"].erase("optimizer");
  CHECK_THROWS_WITH(config_from(doc), Catch::Contains("needs training.distributed_optimizer"));
}

TEST_CASE("a CUDA graph pool keeps the activations' memory from the staged optimizer state",
          "[models][memory][offload][cuda_graphs]") {
  const auto stage = [](const json& doc) {
    const RunConfig c = config_from(doc);
    return memory_report(c.model, c.layout, c.training, 80e9).stages[0];
  };
  json doc = offload_config(0);
  doc["training"]["cuda_graphs"] = "per_layer";
  const StageMemory resident = stage(doc);
  doc["training"]["offload"] = {{"optimizer_states", 1.0}};
  const StageMemory staged = stage(doc);
  doc["training"]["cuda_graphs"] = "none";
  const StageMemory eager = stage(doc);
  // The graphs' pool (every layer captured: all of the activations) is still reserved when the
  // step stages the optimizer state back, so the step's peak (weights, gradients, resident
  // state, placeholders, staging windows) gains the activations; what it then exceeds the eager
  // peak by is reserved on top of the static inputs and working set, which staging leaves as
  // they are. With the state resident the step's peak stays below the forward-backward's.
  const double step = eager.weights + eager.grads + eager.optimizer + eager.wgrad_placeholders +
                      eager.optimizer_staging;
  const double forward_backward = eager.weights + eager.grads + eager.optimizer +
                                  eager.activations + eager.unit_buffers +
                                  eager.wgrad_placeholders + eager.grad_transients;
  const double expected = step + eager.activations - std::max(forward_backward, step);
  REQUIRE(expected > 0);
  CHECK(staged.cuda_graphs - resident.cuda_graphs == Approx(expected));
  CHECK(staged.reserved == Approx(eager.reserved + staged.cuda_graphs));
}
