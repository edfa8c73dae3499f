#include "models/layout.hpp"

#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"
#include "test_models.hpp"

using Catch::Matchers::Contains;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

ParallelSpec parallel(std::int64_t tp, std::int64_t cp, std::int64_t pp) {
  ParallelSpec p;
  p.tp = tp;
  p.cp = cp;
  p.pp = pp;
  return p;
}

}  // namespace

TEST_CASE("dp and the micro-batch count follow from the GPU count", "[models][layout]") {
  const Layout layout =
      make_layout(llama3_70b(), parallel(8, 1, 4), training(8192, 1, 512), 1024, "run.json");
  CHECK(layout.sizes.dp == 32);
  CHECK(layout.num_microbatches == 16);  // 512 / (1·32)
  CHECK(layout.dp_cp() == 32);
  CHECK(layout.ranks().world_size() == 1024);
}

TEST_CASE("each impossible layout is rejected naming the field and the reason",
          "[models][layout]") {
  const ModelSpec model = llama3_70b();  // 64 heads, 8 kv heads, ffn 28672
  CHECK_THROWS_WITH(
      make_layout(model, parallel(8, 1, 3), training(8192, 1, 512), 1000, "r.json"),
      Contains("r.json") && Contains("num_gpus = 1000") && Contains("multiple of tp·cp·pp"));
  CHECK_THROWS_WITH(make_layout(model, parallel(3, 1, 1), training(8192, 1, 512), 3, "r.json"),
                    Contains("parallel.tp = 3") && Contains("attention heads (64)"));
  CHECK_THROWS_WITH(make_layout(model, parallel(16, 1, 1), training(8192, 1, 512), 16, "r.json"),
                    Contains("parallel.tp = 16") && Contains("kv_heads = 8"));
  CHECK_THROWS_WITH(make_layout(model, parallel(8, 1, 1), training(8192, 2, 100), 64, "r.json"),
                    Contains("training.global_batch = 100") && Contains("micro_batch·dp = 2·8"));
  CHECK_THROWS_WITH(make_layout(model, parallel(8, 3, 1), training(8192, 1, 512), 24, "r.json"),
                    Contains("training.seq_len = 8192") && Contains("2·cp"));
  ParallelSpec with_dp = parallel(8, 1, 1);
  with_dp.dp = 4;
  CHECK_THROWS_WITH(make_layout(model, with_dp, training(8192, 1, 512), 16, "r.json"),
                    Contains("parallel.dp = 4") && Contains("= 2"));
  ParallelSpec vpp_alone = parallel(8, 1, 1);
  vpp_alone.vpp = 2;
  CHECK_THROWS_WITH(make_layout(model, vpp_alone, training(8192, 1, 512), 8, "r.json"),
                    Contains("parallel.vpp") && Contains("pp > 1"));
}

TEST_CASE("ffn_hidden must divide by tp", "[models][layout]") {
  ModelSpec model = gpt_model(4, 64, 8);
  model.ffn_hidden = 100;
  CHECK_THROWS_WITH(make_layout(model, parallel(8, 1, 1), training(128, 1, 8), 8, "r.json"),
                    Contains("ffn_hidden (100)"));
}

TEST_CASE("sequence parallelism without tp > 1 is switched off with a note", "[models][layout]") {
  ParallelSpec p = parallel(1, 1, 1);
  p.sequence_parallel = true;
  const Layout layout = make_layout(llama3_70b(), p, training(8192, 1, 64), 8, "r.json");
  CHECK_FALSE(layout.sequence_parallel);
  REQUIRE(layout.notes.size() == 1);
  CHECK_THAT(layout.notes[0], Contains("sequence_parallel switched off"));
  p.tp = 8;
  CHECK(make_layout(llama3_70b(), p, training(8192, 1, 64), 8, "r.json").sequence_parallel);
}

TEST_CASE("with sequence parallelism seq_len/cp must divide by tp", "[models][layout]") {
  ParallelSpec p = parallel(8, 1, 1);
  p.sequence_parallel = true;
  CHECK_THROWS_WITH(make_layout(llama3_70b(), p, training(8196, 1, 64), 8, "r.json"),
                    Contains("multiple of tp = 8"));
}

TEST_CASE("an uneven layer count is placed and reported, not rejected", "[models][layout]") {
  ParallelSpec p = parallel(8, 1, 16);
  const ModelSpec model = [] {
    ModelSpec m = llama3_70b();
    m.layers = 126;
    return m;
  }();
  const Layout layout = make_layout(model, p, training(8192, 1, 512), 1024, "r.json");
  CHECK(layout.placement.uneven);
  CHECK(layout.notes.size() == 1);
}

// Megatron-LM's initialize_model_parallel asserts that the attention and MoE grids share their
// pipeline groups, and with pp not last that their data-parallel sizes agree. Mixtral 8x7B on
// 16 GPUs, tp 1, pp 4, ep 4: attention dp 4, expert dp 1.
TEST_CASE("an order that moves the experts' pipeline stages is rejected", "[models][layout]") {
  ParallelSpec p = parallel(1, 1, 4);
  p.ep = 4;
  // tp-cp-ep-dp-pp (the default): ranks 4s … 4s + 3 are stage s in both grids.
  CHECK_NOTHROW(make_layout(mixtral_8x7b(), p, training(4096, 1, 64), 16, "r.json"));
  // tp-cp-ep-pp-dp: the attention grid puts stage s on ranks s, s + 4, s + 8, s + 12 (dp outer),
  // the expert grid on 4s … 4s + 3 (ep inner, edp 1): an EP group would span four stages.
  p.order = {Axis::tp, Axis::cp, Axis::ep, Axis::pp, Axis::dp};
  CHECK_THROWS_WITH(make_layout(mixtral_8x7b(), p, training(4096, 1, 64), 16, "r.json"),
                    Contains("parallel.order = tp-cp-ep-pp-dp") && Contains("(4)") &&
                        Contains("(1)") && Contains("must be the same"));
  // ep 1 (edp = dp = 4) and the same order: both grids agree.
  p.ep = 1;
  CHECK_NOTHROW(make_layout(mixtral_8x7b(), p, training(4096, 1, 64), 16, "r.json"));
  // tp 2 (with SP), pp 2, ep 2, etp 1: dp = edp = 4, but in tp-pp-cp-ep-dp the attention
  // grid's pipeline stride is tp = 2 and the expert grid's etp = 1.
  ParallelSpec q = parallel(2, 1, 2);
  q.sequence_parallel = true;
  q.ep = 2;
  q.order = {Axis::tp, Axis::pp, Axis::cp, Axis::ep, Axis::dp};
  CHECK_THROWS_WITH(
      make_layout(mixtral_8x7b(), q, training(4096, 1, 64), 16, "r.json"),
      Contains("parallel.order = tp-pp-cp-ep-dp") && Contains("same pipeline groups"));
  q.etp = 2;  // edp 2 now differs from dp 4
  CHECK_THROWS_WITH(make_layout(mixtral_8x7b(), q, training(4096, 1, 64), 16, "r.json"),
                    Contains("must be the same"));
}
