#include "models/memory.hpp"

#include <catch2/catch.hpp>

#include "models/activation_memory.hpp"
#include "models/parameter_count.hpp"
#include "test_models.hpp"

using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

constexpr double kHbm = 80e9;

Layout layout_for(const ModelSpec& m, std::int64_t tp, std::int64_t cp, std::int64_t pp,
                  std::int64_t gpus, const TrainingSpec& t, bool sp = true) {
  ParallelSpec p;
  p.tp = tp;
  p.cp = cp;
  p.pp = pp;
  p.sequence_parallel = sp;
  return make_layout(m, p, t, gpus, "test");
}

}  // namespace

TEST_CASE("static bytes equal Megatron's compute_weight_and_optimizer_memory with pp = 1",
          "[models][memory]") {
  for (bool distributed : {false, true}) {
    TrainingSpec t = training(8192, 1, 512);
    t.distributed_optimizer = distributed;
    for (const ModelSpec& m : {llama3_70b(), gpt_model(96, 12288, 96)}) {
      const Layout layout = layout_for(m, 8, 1, 1, 64, t);
      const StageMemory s = memory_report(m, layout, t, kHbm).stages[0];
      CHECK(s.weights + s.grads + s.optimizer ==
            Approx(megatron_weight_and_optimizer_bytes(m, layout, t)).epsilon(1e-12));
    }
  }
}

TEST_CASE("with pp > 1 the first stage differs from Megatron only by its share of the final norm",
          "[models][memory]") {
  // Megatron spreads the final norm as ν·h/p over every stage; wallsim puts it on the last.
  TrainingSpec t = training(8192, 1, 512);
  t.distributed_optimizer = true;
  const ModelSpec m = llama3_70b();
  const Layout layout = layout_for(m, 8, 1, 4, 1024, t);  // dp 32
  const StageMemory first = memory_report(m, layout, t, kHbm).stages[0];
  const double beta = 6 + 12.0 / 32;
  const double final_norm_share = 1.0 * 8192 / 4 * beta;
  CHECK(
      first.weights + first.grads + first.optimizer ==
      Approx(megatron_weight_and_optimizer_bytes(m, layout, t) - final_norm_share).epsilon(1e-12));
}

TEST_CASE("stage parameters: layers ÷ tp, embedding first, output layer and final norm last",
          "[models][memory]") {
  const ModelSpec m = llama3_70b();  // untied
  const Layout layout = layout_for(m, 8, 1, 4, 1024, training(8192, 1, 512));
  const LayerParameters layer = layer_parameters(m);
  const double embedding = 129024.0 * 8192 / 8;  // V padded to a multiple of 128·8
  const double layers = 20 * (layer.tp_sharded() / 8 + layer.norms);
  CHECK(stage_parameters(m, layout, 0).total() == Approx(layers + embedding));
  CHECK(stage_parameters(m, layout, 1).total() == Approx(layers));
  CHECK(stage_parameters(m, layout, 3).total() == Approx(layers + embedding + 8192));
  // Summed over stages and multiplied by tp (for the TP-sharded part) it is the whole model.
  double whole = 0;
  for (std::int64_t s = 0; s < 4; ++s) {
    const auto p = stage_parameters(m, layout, s);
    whole += p.tp_sharded * 8 + p.replicated;
  }
  CHECK(whole == Approx(total_parameters(m, 8)));
}

TEST_CASE("the distributed optimizer shrinks optimizer bytes by dp·cp", "[models][memory]") {
  const ModelSpec m = llama3_70b();
  TrainingSpec t = training(8192, 1, 256);
  const Layout layout = layout_for(m, 8, 2, 4, 512, t);  // dp 8, cp 2
  const auto plain = memory_report(m, layout, t, kHbm);
  t.distributed_optimizer = true;  // the layout's data sharding follows it
  const auto sharded = memory_report(m, layout_for(m, 8, 2, 4, 512, t), t, kHbm);
  CHECK(sharded.optimizer_shards == 16);
  CHECK(plain.stages[1].optimizer / sharded.stages[1].optimizer == Approx(16));
  CHECK(plain.stages[1].weights == sharded.stages[1].weights);
  CHECK(plain.stages[1].grads == sharded.stages[1].grads);
  REQUIRE_FALSE(sharded.notes.empty());
  CHECK_THAT(sharded.notes[0], Catch::Matchers::Contains("dp·cp = 16"));
}

TEST_CASE("1F1B: a middle stage holds (pp - stage) micro-batches of its layers",
          "[models][memory]") {
  const ModelSpec m = llama3_70b();
  const TrainingSpec t = training(8192, 1, 512);
  const Layout layout = layout_for(m, 8, 1, 4, 1024, t);
  const auto report = memory_report(m, layout, t, kHbm);
  const double per_layer = layer_activation_bytes(m, activation_setting(t, 8, 1, true));
  CHECK(report.stages[1].activations == Approx(3 * 20 * per_layer));
  CHECK(report.stages[2].activations == Approx(2 * 20 * per_layer));
  CHECK(report.stages[1].microbatches_in_flight == 3);
}

TEST_CASE("sequence parallelism shrinks a stage's activations", "[models][memory]") {
  const ModelSpec m = llama3_70b();
  const TrainingSpec t = training(8192, 1, 512);
  const auto with = memory_report(m, layout_for(m, 8, 1, 4, 1024, t, true), t, kHbm);
  const auto without = memory_report(m, layout_for(m, 8, 1, 4, 1024, t, false), t, kHbm);
  // Per token per layer TP leaves 4h of norm inputs and 4h of QKV/FC1 inputs whole (no dropout).
  const double replicated = 8.0 * 8192 * 8192;
  CHECK(without.stages[1].activations - with.stages[1].activations ==
        Approx(3 * 20 * replicated * (1 - 1.0 / 8)));
}

TEST_CASE("full recompute keeps only layer inputs, plus one layer while it recomputes",
          "[models][memory]") {
  const ModelSpec m = llama3_70b();
  TrainingSpec t = training(8192, 1, 512);
  t.recompute = Recompute::full;
  const auto report = memory_report(m, layout_for(m, 8, 1, 4, 1024, t), t, kHbm);
  const double input = 2.0 * 8192 * 8192 / 8;  // 2sbh ÷ t (SP)
  TrainingSpec plain = t;
  plain.recompute = Recompute::none;
  const double one_layer = layer_activation_bytes(m, activation_setting(plain, 8, 1, true));
  CHECK(report.stages[1].activations == Approx(3 * 20 * input + one_layer));
}

TEST_CASE("peak adds buffers, not fitting is reported, not an error", "[models][memory]") {
  const ModelSpec m = llama3_70b();
  const TrainingSpec t = training(8192, 1, 64);
  const Layout layout = layout_for(m, 1, 1, 1, 8, t, false);
  const auto report = memory_report(m, layout, t, kHbm);
  const auto& s = report.stages[0];
  const double tracked =
      s.weights + s.grads + s.optimizer + s.activations + s.wgrad_placeholders + s.grad_transients;
  // allocated ⊂ reserved ⊂ peak (models/allocator_memory.hpp derives each step).
  CHECK(s.allocated == Approx(tracked + s.workspaces));
  CHECK(s.reserved == Approx(s.allocated + s.allocator_slack));
  CHECK(s.peak == Approx(s.reserved + s.outside_allocator));
  CHECK(s.buffers == Approx(s.peak - tracked));
  CHECK(s.peak == Approx(tracked + s.buffers));
  CHECK(report.peak_bytes == s.peak);
  CHECK_FALSE(report.fits_in_memory);  // 70B params · 18 bytes on one GPU
}

TEST_CASE("interleaving keeps more micro-batches on the first stage", "[models][memory]") {
  const ModelSpec m = llama3_70b();
  const TrainingSpec t = training(8192, 1, 512);
  ParallelSpec p;
  p.tp = 8;
  p.pp = 4;
  p.vpp = 5;
  p.sequence_parallel = true;
  const Layout layout = make_layout(m, p, t, 1024, "test");
  const auto report = memory_report(m, layout, t, kHbm);
  // Megatron's factor: L·(1 + (p-1)/(p·v)) layers' worth = 80·(1 + 3/20) = 92 layers. Chunk 0
  // (with the embedding) runs for micro-batches 0-3 and then 4-7 before its first backward:
  // 2p = 8 embedding activations alive at the peak.
  const double per_layer = layer_activation_bytes(m, activation_setting(t, 8, 1, true));
  const auto setting = activation_setting(t, 8, 1, true);
  CHECK(report.stages[0].activations ==
        Approx(92 * per_layer + 8 * embedding_activation_bytes(m, setting)));
}

namespace {

// 8 GPUs, tp 2, dp 4; the expert grid folded as etp 1 × ep 4 × edp 2.
Layout moe_layout(const ModelSpec& m, const TrainingSpec& t, std::int64_t pp = 1) {
  Layout layout = layout_for(m, 2, 1, pp, 8 * pp, t);
  layout.expert = ExpertLayout{1, 4, 2};
  return layout;
}

}  // namespace

TEST_CASE("MoE static bytes equal Megatron's estimate with pp = 1 (experts ÷ etp·ep, Adam ÷ edp)",
          "[models][memory][moe]") {
  // megatron_formulas.md §2: (N_tp + N_rep)·β(D) + N_exp·β(D_e), β(X) = 6 + 12/X or 18. With
  // pp = 1 the MTP layer and the final norm sit on the one stage in both accountings.
  for (bool distributed : {false, true}) {
    TrainingSpec t = training(4096, 1, 64);
    t.distributed_optimizer = distributed;
    for (const ModelSpec& m : {mixtral_8x7b(), deepseek_v3()}) {
      const Layout layout = moe_layout(m, t);
      const StageMemory s = memory_report(m, layout, t, kHbm).stages[0];
      CHECK(s.weights + s.grads + s.optimizer ==
            Approx(megatron_weight_and_optimizer_bytes(m, layout, t)).epsilon(1e-12));
    }
  }
}

TEST_CASE("routed experts are sharded over etp·ep, their optimizer state over edp",
          "[models][memory][moe]") {
  // Mixtral on tp 2, etp 1, ep 4: each GPU holds 8/4 = 2 experts of every layer whole:
  // 32·2·3h·14336 expert parameters; the rest ÷ tp as for a dense model.
  TrainingSpec t = training(4096, 1, 64);
  t.distributed_optimizer = true;
  const ModelSpec m = mixtral_8x7b();
  const Layout layout = moe_layout(m, t);
  const StageParameters p = stage_parameters(m, layout, 0);
  CHECK(p.expert_sharded == 32.0 * 2 * 3 * 4096 * 14336);
  // Optimizer: 12 bytes over dp·cp = 4 for the dense part, over edp = 2 for the experts.
  const StageMemory s = memory_report(m, layout, t, kHbm).stages[0];
  CHECK(s.optimizer ==
        Approx(3.0 * (p.tp_sharded + p.replicated) + 6.0 * p.expert_sharded).epsilon(1e-12));
  CHECK(expert_optimizer_shards(layout, t) == 2);
}

TEST_CASE("a stage's activations sum the real bytes of the layers it holds",
          "[models][memory][moe]") {
  // 4 layers, the first 2 dense, pp 2: stage 0 holds two dense layers and keeps 2 micro-batches
  // (1F1B), stage 1 two MoE layers and the output layer for 1 micro-batch.
  TrainingSpec t = training(4096, 1, 16);
  ModelSpec m = mixtral_8x7b();
  m.layers = 4;
  m.moe->first_dense_layers = 2;
  const Layout layout = layout_for(m, 2, 1, 2, 4, t);
  const ActivationSetting s = activation_setting(t, 2, 1, true);
  const MemoryReport r = memory_report(m, layout, t, kHbm);
  CHECK(r.stages[0].activations ==
        Approx(2 * (2 * layer_activation_bytes(m, s, 0) + embedding_activation_bytes(m, s)))
            .epsilon(1e-12));
  CHECK(r.stages[1].activations ==
        Approx(2 * layer_activation_bytes(m, s, 2) + output_activation_bytes(m, s)).epsilon(1e-12));
}
