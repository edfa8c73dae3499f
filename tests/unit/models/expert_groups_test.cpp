// The MoE grid's groups: Megatron's parallel folding and DeepSpeed-Megatron's construction, on
// the worked examples of mechanics.md §4.1 and §6.1 (produced there by running the frameworks'
// own group code).
#include "models/expert_groups.hpp"

#include <algorithm>

#include <catch2/catch.hpp>

#include "sim/core/input_error.hpp"
#include "test_models.hpp"

using Catch::Matchers::Contains;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

// A small MoE model: 16 heads (tp up to 8), 8 experts of width 512.
ModelSpec moe_model() {
  ModelSpec m = gpt_model(4, 1024, 16);
  m.moe = MoeSpec{};
  m.moe->experts = 8;
  m.moe->topk = 2;
  m.moe->ffn_hidden = 512;
  return m;
}

Layout layout(std::int64_t gpus, std::int64_t tp, std::int64_t cp, std::int64_t pp, std::int64_t ep,
              std::int64_t etp, EpGroupStyle style = EpGroupStyle::kMegatron, bool sp = true) {
  ParallelSpec p;
  p.tp = tp;
  p.cp = cp;
  p.pp = pp;
  p.ep = ep;
  p.etp = etp;
  p.sequence_parallel = sp;
  p.ep_group_style = style;
  return make_layout(moe_model(), p, training(4096, 1, 64), gpus, "run.json");
}

bool has(const RankGroups& groups, const std::vector<std::int64_t>& group) {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

}  // namespace

TEST_CASE("Megatron folds EP over the attention grid's TP x CP ranks", "[models][moe]") {
  // mechanics.md §6.1: world 16, t = 2, c = 2, d = 2, p = 2; expert grid t_e = 1, e = 4,
  // EDP = 2: EP [0,1,2,3], [4,5,6,7], ... (the attention TP×CP group); EDP [0,4], [1,5], ...
  const Layout l = layout(16, 2, 2, 2, 4, 1);
  CHECK(l.expert.edp == 2);  // 16 / (1·4·2)
  const ExpertGroups g = expert_groups(l);
  CHECK(g.ep.front() == std::vector<std::int64_t>{0, 1, 2, 3});
  CHECK(has(g.ep, {4, 5, 6, 7}));
  CHECK(g.edp.front() == std::vector<std::int64_t>{0, 4});
  CHECK(has(g.edp, {1, 5}));
  // t_e = 2, e = 2: ETP [0,1], EP [0,2], [1,3], [4,6], EDP [0,4].
  const ExpertGroups g2 = expert_groups(layout(16, 2, 2, 2, 2, 2));
  CHECK(g2.etp.front() == std::vector<std::int64_t>{0, 1});
  CHECK(has(g2.ep, {0, 2}));
  CHECK(has(g2.ep, {1, 3}));
  CHECK(has(g2.ep, {4, 6}));
  CHECK(has(g2.edp, {0, 4}));
  CHECK(has(g2.tp_ep, {0, 1, 2, 3}));
}

TEST_CASE("DeepSpeed-Megatron EP groups: consecutive, or cut from the DP groups with ETP",
          "[models][moe]") {
  // mechanics.md §4.1, world 16, ep 2, no expert TP: EP [0,1], [2,3], ...; EDP [0,2,...,14],
  // [1,3,...,15].
  const ExpertGroups a = expert_groups(layout(16, 1, 1, 1, 2, 1, EpGroupStyle::kDeepSpeed));
  CHECK(a.ep.front() == std::vector<std::int64_t>{0, 1});
  CHECK(has(a.ep, {2, 3}));
  CHECK(has(a.edp, {0, 2, 4, 6, 8, 10, 12, 14}));
  CHECK(has(a.edp, {1, 3, 5, 7, 9, 11, 13, 15}));
  // World 16, t = 2, ep = 4 with expert TP: EP [0,2,4,6], [8,10,12,14], [1,3,5,7],
  // [9,11,13,15]; EDP [0,8], [2,10], [4,12], [6,14], [1,9], ...
  const ExpertGroups b = expert_groups(layout(16, 2, 1, 1, 4, 2, EpGroupStyle::kDeepSpeed));
  for (const std::vector<std::int64_t>& ep :
       {std::vector<std::int64_t>{0, 2, 4, 6}, {8, 10, 12, 14}, {1, 3, 5, 7}, {9, 11, 13, 15}}) {
    CHECK(has(b.ep, ep));
  }
  for (const std::vector<std::int64_t>& edp :
       {std::vector<std::int64_t>{0, 8}, {2, 10}, {4, 12}, {6, 14}, {1, 9}}) {
    CHECK(has(b.edp, edp));
  }
}

TEST_CASE("MoE layout rules name the field and the reason", "[models][moe]") {
  CHECK_THROWS_WITH(layout(16, 1, 1, 1, 3, 1), Contains("parallel.ep = 3"));
  CHECK_THROWS_WITH(layout(16, 2, 1, 1, 16, 1),
                    Contains("parallel.ep = 16") && Contains("divide the experts (8)"));
  CHECK_THROWS_WITH(layout(16, 2, 1, 1, 2, 1, EpGroupStyle::kMegatron, false),
                    Contains("needs sequence_parallel"));
  CHECK_THROWS_WITH(layout(16, 1, 1, 1, 2, 3), Contains("etp·ep·pp = 3·2·1 = 6"));
  // Dense models keep ep = etp = 1.
  ParallelSpec p;
  p.ep = 2;
  CHECK_THROWS_WITH(make_layout(gpt_model(4, 1024, 16), p, training(4096, 1, 64), 8, "r.json"),
                    Contains("parallel.ep = 2") && Contains("dense"));
}
