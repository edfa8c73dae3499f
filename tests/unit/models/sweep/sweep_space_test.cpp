#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "models/sweep/sweep_space.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;

TEST_CASE("the space's size is the product of its knobs' value counts, each point once",
          "[sweep]") {
  SweepSpace space;
  space.tp = {1, 2, 4};
  space.pp = {1, 2};
  space.micro_batch = {1, 2};
  space.recompute = {Recompute::none, Recompute::full};
  // 3 · 2 · 2 · 2 = 24 by hand.
  REQUIRE(space.size() == 24);
  std::set<std::string> ids;
  for (std::int64_t i = 0; i < space.size(); ++i) ids.insert(point_id(space.at(i)));
  CHECK(ids.size() == 24);
  // The last knob varies fastest: point 0 and 1 differ only in recompute (overlap has one value).
  CHECK(space.at(0).recompute == Recompute::none);
  CHECK(space.at(1).recompute == Recompute::full);
  CHECK(space.at(23) == SweepPoint{4, true, 1, 2, 1, "", 1, 1, MoeDispatcher::kAllToAll, 2,
                                   Recompute::full, true, true, std::nullopt, std::nullopt,
                                   std::nullopt, std::nullopt});
}

TEST_CASE("with_recompute names the same point with another recompute", "[sweep]") {
  SweepSpace space;
  space.tp = {1, 2};
  space.recompute = {Recompute::full, Recompute::none, Recompute::selective};
  space.distributed_optimizer = {true, false};
  space.graphs = {std::nullopt, CudaGraphs::kPerLayer};
  space.placement = {std::nullopt, 64};
  for (std::int64_t i = 0; i < space.size(); ++i) {
    for (std::size_t k = 0; k < space.recompute.size(); ++k) {
      const std::int64_t j = space.with_recompute(i, k);
      REQUIRE(j >= 0);
      REQUIRE(j < space.size());
      SweepPoint expected = space.at(i);
      expected.recompute = space.recompute[k];
      CHECK(space.at(j) == expected);
    }
  }
}

TEST_CASE("the default space of Llama 3 70B on 1,024 GPUs, counted by hand", "[sweep]") {
  const SweepSpace space = default_space({80, 1024, 8});
  CHECK(space.tp == std::vector<std::int64_t>{1, 2, 4, 8});
  CHECK(space.cp == std::vector<std::int64_t>{1});
  // Divisors of 1024 that are at most 80 layers.
  CHECK(space.pp == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64});
  // v > 1 with 80 % (pp·v) == 0 for some pp > 1 in the list: pp = 2 gives the divisors of 40.
  CHECK(space.vpp == std::vector<std::int64_t>{1, 2, 4, 5, 8, 10, 20, 40});
  CHECK(space.micro_batch == std::vector<std::int64_t>{1, 2, 4});
  CHECK(space.recompute.size() == 3);
  CHECK(space.size() == 4 * 7 * 8 * 3 * 3);
}

TEST_CASE("the default space keeps tp within a node and pp within the layers", "[sweep]") {
  // 4 GPUs per node, 6 layers, 12 GPUs: tp ∈ {1,2,4}; pp ∈ divisors of 12 that are <= 6;
  // vpp: 6 % (pp·v) == 0 for pp = 2 (v = 3), pp = 3 (v = 2).
  const SweepSpace space = default_space({6, 12, 4});
  CHECK(space.tp == std::vector<std::int64_t>{1, 2, 4});
  CHECK(space.pp == std::vector<std::int64_t>{1, 2, 3, 4, 6});
  CHECK(space.vpp == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("vary replaces a knob's values and rejects what it cannot sweep", "[sweep]") {
  SweepSpace space = default_space({80, 1024, 8});
  apply_vary(space, "tp=8,4,8");
  apply_vary(space, "recompute=selective");
  apply_vary(space, "overlap=on,off");
  apply_vary(space, "mb=1");
  CHECK(space.tp == std::vector<std::int64_t>{8, 4});
  CHECK(space.recompute == std::vector<Recompute>{Recompute::selective});
  CHECK(space.overlap == std::vector<bool>{true, false});
  CHECK(space.size() == 2 * 7 * 8 * 1 * 1 * 2);
  CHECK_THROWS_WITH(apply_vary(space, "dispatcher=alltogether"),
                    Catch::Contains("alltoall, allgather, flex"));
  CHECK_THROWS_WITH(apply_vary(space, "ep=0"), Catch::Contains("positive integer"));
  CHECK_THROWS_WITH(apply_vary(space, "tpp=2"), Catch::Contains("unknown knob"));
  CHECK_THROWS_WITH(apply_vary(space, "tp=0"), Catch::Contains("positive integer"));
  CHECK_THROWS_WITH(apply_vary(space, "recompute=some"), Catch::Contains("none, selective, full"));
  CHECK_THROWS_AS(apply_vary(space, "tp"), InputError);
}

TEST_CASE("point ids name every knob that distinguishes a point", "[sweep]") {
  SweepPoint p{8,
               true,
               1,
               4,
               5,
               "",
               1,
               1,
               MoeDispatcher::kAllToAll,
               1,
               Recompute::none,
               true,
               true,
               std::nullopt,
               std::nullopt,
               std::nullopt,
               std::nullopt};
  CHECK(point_id(p) == "tp8-cp1-pp4-vpp5-mb1-none");
  p.sequence_parallel = false;
  p.distributed_optimizer = false;
  p.overlap = false;
  CHECK(point_id(p) == "tp8-cp1-pp4-vpp5-mb1-none-nosp-nodo-noov");
  p.tp = 1;  // sequence parallelism means nothing without tp
  CHECK(point_id(p) == "tp1-cp1-pp4-vpp5-mb1-none-nodo-noov");
  p.ep = 8;
  p.etp = 2;
  p.dispatcher = MoeDispatcher::kAllGather;
  CHECK(point_id(p) == "tp1-cp1-pp4-vpp5-ep8-etp2-allgather-mb1-none-nodo-noov");
  p.offload = SweepOffload::kOptimizer;
  CHECK(point_id(p) == "tp1-cp1-pp4-vpp5-ep8-etp2-allgather-mb1-none-nodo-noov-offload-opt");
}

TEST_CASE("offloading choices listed by --vary offload vary fastest", "[sweep]") {
  SweepSpace space;
  apply_vary(space, "offload=none,activations,optimizer");
  REQUIRE(space.size() == 3);
  CHECK(space.at(0).offload == SweepOffload::kNone);
  CHECK(space.at(1).offload == SweepOffload::kActivations);
  CHECK(space.at(2).offload == SweepOffload::kOptimizer);
  CHECK(point_id(space.at(1)) == "tp1-cp1-pp1-vpp1-mb1-none-offload-act");
  CHECK(describe_space(space).back() ==
        std::pair<std::string, std::string>{"offload", "none,activations,optimizer"});
  CHECK_THROWS_WITH(apply_vary(space, "offload=layers"),
                    Catch::Contains("must be one of: none, activations, optimizer"));
}

TEST_CASE("CUDA-graph scopes listed by --vary graphs vary fastest", "[sweep]") {
  SweepSpace space;
  apply_vary(space, "offload=none,activations");
  apply_vary(space, "graphs=none,per_layer,full_iteration");
  REQUIRE(space.size() == 6);
  CHECK(space.at(0).cuda_graphs == CudaGraphs::kNone);
  CHECK(space.at(1).cuda_graphs == CudaGraphs::kPerLayer);
  CHECK(space.at(2).cuda_graphs == CudaGraphs::kFullIteration);
  CHECK(space.at(3).offload == SweepOffload::kActivations);
  CHECK(point_id(space.at(1)) == "tp1-cp1-pp1-vpp1-mb1-none-nooffload-graphs");
  CHECK(point_id(space.at(5)) == "tp1-cp1-pp1-vpp1-mb1-none-offload-act-fullgraph");
  CHECK(point_id(space.at(0)).ends_with("-eager"));
  CHECK(describe_space(space).back() ==
        std::pair<std::string, std::string>{"graphs", "none,per_layer,full_iteration"});
  CHECK_THROWS_WITH(apply_vary(space, "graphs=attn"),
                    Catch::Contains("must be one of: none, per_layer, full_iteration"));
}

TEST_CASE("NVLink-domain shares listed by --vary placement vary fastest", "[sweep]") {
  SweepSpace space;
  apply_vary(space, "graphs=none,per_layer");
  apply_vary(space, "placement=72,64,72");  // repeats dropped
  REQUIRE(space.size() == 4);
  CHECK(space.at(0).placement == 72);
  CHECK(space.at(1).placement == 64);
  CHECK(space.at(2).cuda_graphs == CudaGraphs::kPerLayer);
  CHECK(point_id(space.at(1)) == "tp1-cp1-pp1-vpp1-mb1-none-eager-place64");
  CHECK(describe_space(space).back() == std::pair<std::string, std::string>{"placement", "72,64"});
  CHECK_THROWS_WITH(apply_vary(space, "placement=rack"),
                    Catch::Contains("\"rack\" is not a positive integer"));
  CHECK_THROWS_WITH(apply_vary(space, "placement=0"),
                    Catch::Contains("\"0\" is not a positive integer"));
}

TEST_CASE("a mixture-of-experts model's default space sweeps ep, etp and the dispatcher",
          "[sweep]") {
  // Qwen3-235B-A22B's shape on 256 GPUs: 94 layers, 128 experts. ep: the powers of two up to
  // 64 dividing 128 and 256 (1..64, seven values); etp as tp within a node {1,2,4,8}; two
  // dispatchers. A dense model keeps the single default values.
  const SweepSpace moe = default_space({94, 256, 8, 4096, 128});
  CHECK(moe.ep == std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64});
  CHECK(moe.etp == std::vector<std::int64_t>{1, 2, 4, 8});
  CHECK(moe.dispatcher ==
        std::vector<MoeDispatcher>{MoeDispatcher::kAllToAll, MoeDispatcher::kAllGather});
  const SweepSpace dense = default_space({94, 256, 8, 4096, 0});
  CHECK(dense.size() * 7 * 4 * 2 == moe.size());
  // Mixtral's 8 experts on 64 GPUs: ep up to 8.
  CHECK(default_space({32, 64, 8, 4096, 8}).ep == std::vector<std::int64_t>{1, 2, 4, 8});
  // ep, etp and dispatcher sit between vpp and micro_batch in the enumeration.
  SweepSpace space;
  space.ep = {1, 8};
  space.micro_batch = {1, 2};
  CHECK(space.at(1).micro_batch == 2);
  CHECK(space.at(1).ep == 1);
  CHECK(space.at(2).ep == 8);
}

TEST_CASE("the pipeline schedule is a sweep knob (--vary schedule=...)", "[sweep]") {
  SweepSpace space;
  space.pp = {4};
  space.vpp = {1, 2};
  apply_vary(space, "schedule=megatron,zb_h1");
  // 2 vpp × 2 schedules.
  REQUIRE(space.size() == 4);
  // Megatron's choice follows vpp; a named schedule stays (a vpp it cannot run is pruned later).
  CHECK(effective_schedule(space.at(0)) == "1f1b");
  CHECK(effective_schedule(space.at(1)) == "zb_h1");
  CHECK(effective_schedule(space.at(2)) == "interleaved");
  CHECK(point_id(space.at(1)) == "tp1-cp1-pp4-vpp1-zb_h1-mb1-none");
  CHECK(point_id(space.at(0)) == "tp1-cp1-pp4-vpp1-mb1-none");
  CHECK_THROWS_WITH(
      apply_vary(space, "schedule=gpipe"),
      Catch::Contains("megatron, 1f1b, interleaved, zb_h1, zb_h2, zbv, dualpipev, dualpipe"));
  // The V-shape and bidirectional schedules are knobs like the others; at vpp 1 their points
  // are pruned later.
  apply_vary(space, "schedule=zbv,dualpipev,dualpipe");
  REQUIRE(space.size() == 6);
  CHECK(effective_schedule(space.at(4)) == "dualpipev");
  CHECK(point_id(space.at(4)) == "tp1-cp1-pp4-vpp2-dualpipev-mb1-none");
  CHECK(effective_schedule(space.at(5)) == "dualpipe");
  CHECK(point_id(space.at(5)) == "tp1-cp1-pp4-vpp2-dualpipe-mb1-none");
}

TEST_CASE("data sharding is a sweep knob that decides the distributed optimizer", "[sweep]") {
  SweepSpace space;
  space.recompute = {Recompute::none, Recompute::full};
  apply_vary(space, "sharding=none,optimizer,params");
  // 2 recompute × 3 shardings, sharding varying faster.
  REQUIRE(space.size() == 6);
  CHECK(effective_sharding(space.at(0)) == DataSharding::kNone);
  CHECK_FALSE(space.at(0).distributed_optimizer);  // "none" is without it
  CHECK(space.at(1).distributed_optimizer);
  CHECK(effective_sharding(space.at(2)) == DataSharding::kParams);
  CHECK(point_id(space.at(0)) == "tp1-cp1-pp1-vpp1-mb1-none-ddp");
  CHECK(point_id(space.at(5)) == "tp1-cp1-pp1-vpp1-mb1-full-fsdp");
  // Without the knob, the switch decides and the id is unchanged.
  CHECK(effective_sharding(SweepSpace{}.at(0)) == DataSharding::kOptimizer);
  CHECK(point_id(SweepSpace{}.at(0)) == "tp1-cp1-pp1-vpp1-mb1-none");
  CHECK_THROWS_WITH(apply_vary(space, "dist_opt=on,off"), Catch::Contains("already chosen"));
  CHECK_THROWS_WITH(apply_vary(space, "sharding=zero3"),
                    Catch::Contains("none, optimizer, grads, params"));
  SweepSpace both;
  apply_vary(both, "dist_opt=on,off");
  CHECK_THROWS_WITH(apply_vary(both, "sharding=grads"),
                    Catch::Contains("either dist_opt or sharding"));
}
