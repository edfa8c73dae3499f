// The V-shape schedules, ZB-V (Qi et al., ICLR 2024, arXiv:2401.10241; arXiv:2405.15362) and
// DualPipeV (DeepSeek-V3, arXiv:2412.19437 §3.2.1; deepseek-ai/DualPipe), and DualPipe itself
// (two chains, one per direction), against closed forms on uniform stages: their per-stage
// orders are replayed with uniform per-chunk pass costs and no communication time, as the
// papers' analyses assume.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "models/pipeline_schedule.hpp"

using namespace wallsim::models;

namespace {

// Costs of one pass of one chunk. A schedule without W passes runs W inside B.
struct Costs {
  double f = 1, b = 1, w = 1;
};

// The replay's answer: when the last stage finished, or that some stage never could.
struct Replay {
  double step = 0;
  bool completed = false;
};

using Key = std::pair<std::int64_t, std::int64_t>;  // (virtual stage, micro-batch)

// Replays `name` on `shape`: each stage runs its order in sequence; F of virtual stage v waits
// for F of v − 1, B of v for B of v + 1 (the last virtual stage's B for its own F), W for its
// B, v ± 1 along v's chain. With `pairs`, a B directly followed by the F of another micro-batch
// runs as one pass of cost `pair_cost` once both inputs are there, as the step builder's combined
// pairs do.
Replay replay(const std::string& name, PipelineShape shape, Costs c, bool pairs = false,
              double pair_cost = 0) {
  const PipelineSchedule* schedule = find_pipeline_schedule(name);
  REQUIRE(schedule != nullptr);
  const VirtualStages v(*schedule, shape);
  const double b_cost = schedule->splits_weight_gradients ? c.b : c.b + c.w;
  std::vector<std::vector<ScheduleItem>> orders;
  for (std::int64_t s = 0; s < shape.pp; ++s) orders.push_back(schedule->order(shape, s));
  std::map<Key, double> f_end, b_end;
  const auto input = [&](std::int64_t s, const ScheduleItem& item) -> std::optional<double> {
    const std::int64_t at = v.of(s, item.chunk);
    const auto* ends = &b_end;
    Key key{at, item.microbatch};
    if (item.pass == Pass::kForward) {
      if (v.first(s, item.chunk)) return 0.0;
      ends = &f_end;
      key.first = at - 1;
    } else if (item.pass == Pass::kBackward) {
      if (v.last(s, item.chunk))
        ends = &f_end;
      else
        key.first = at + 1;
    }
    const auto it = ends->find(key);
    if (it == ends->end()) return std::nullopt;
    return it->second;
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(shape.pp), 0);
  std::vector<double> free_at(static_cast<std::size_t>(shape.pp), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t s = 0; s < shape.pp; ++s) {
      const auto& order = orders[static_cast<std::size_t>(s)];
      auto& i = next[static_cast<std::size_t>(s)];
      double& t = free_at[static_cast<std::size_t>(s)];
      while (i < order.size()) {
        const ScheduleItem& item = order[i];
        const bool pair = pairs && item.pass == Pass::kBackward && i + 1 < order.size() &&
                          order[i + 1].forward() && order[i + 1].microbatch != item.microbatch;
        if (pair) {
          const ScheduleItem& f = order[i + 1];
          const auto b_ready = input(s, item), f_ready = input(s, f);
          if (!b_ready || !f_ready) break;
          t = std::max({t, *b_ready, *f_ready}) + pair_cost;
          b_end[{v.of(s, item.chunk), item.microbatch}] = t;
          f_end[{v.of(s, f.chunk), f.microbatch}] = t;
          i += 2;
          progress = true;
          continue;
        }
        const auto ready = input(s, item);
        if (!ready) break;
        const double cost = item.forward() ? c.f : item.pass == Pass::kBackward ? b_cost : c.w;
        t = std::max(t, *ready) + cost;
        if (item.forward()) f_end[{v.of(s, item.chunk), item.microbatch}] = t;
        if (item.pass == Pass::kBackward) b_end[{v.of(s, item.chunk), item.microbatch}] = t;
        ++i;
        progress = true;
      }
    }
  }
  Replay result;
  result.completed = true;
  for (std::int64_t s = 0; s < shape.pp; ++s) {
    result.completed = result.completed && next[static_cast<std::size_t>(s)] ==
                                               orders[static_cast<std::size_t>(s)].size();
  }
  result.step = *std::max_element(free_at.begin(), free_at.end());
  return result;
}

// Every stage's work: 2m passes each of F, B and W, one chunk each.
double work(std::int64_t m, Costs c) {
  return 2.0 * static_cast<double>(m) * (c.f + c.b + c.w);
}

// Each (micro-batch, chunk) runs F, then B, then W, exactly once: every micro-batch on both
// chunks, or with two chains (DualPipe, `chains` given) micro-batches 0 … m/2 − 1 on the chunk of
// chain 0 and the rest on chain 1's.
void check_passes_in_order(const std::vector<ScheduleItem>& order, std::int64_t m,
                           const VirtualStages* chains = nullptr, std::int64_t stage = 0) {
  std::map<std::pair<std::int64_t, std::int64_t>, int> seen;
  for (const ScheduleItem& item : order) {
    CHECK(seen[{item.microbatch, item.chunk}] == static_cast<int>(item.pass));
    ++seen[{item.microbatch, item.chunk}];
    if (chains) {
      const std::int64_t chain = chains->of(stage, item.chunk) / chains->chain_length();
      CHECK(item.microbatch / (m / 2) == chain);
    }
  }
  CHECK(seen.size() == static_cast<std::size_t>(chains ? m : 2 * m));
  for (const auto& [key, passes] : seen) CHECK(passes == 3);
}

}  // namespace

TEST_CASE("V-shape schedules place chunk 0 of stage s at virtual stage s, chunk 1 at 2p − 1 − s",
          "[models][schedule][v_shape]") {
  for (const std::string name : {"zbv", "dualpipev"}) {
    const VirtualStages v(*find_pipeline_schedule(name), {4, 2, 8});
    CHECK(v.of(0, 0) == 0);
    CHECK(v.of(3, 0) == 3);
    CHECK(v.of(3, 1) == 4);  // the turn of the V: virtual stages 3 and 4 both on stage 3
    CHECK(v.of(0, 1) == 7);  // the loss is on stage 0
    CHECK(v.place(7).stage == 0);
  }
}

TEST_CASE("V-shape orders run F, B, W of every chunk in order and never deadlock",
          "[models][schedule][v_shape]") {
  for (const auto& [name, pp, m] :
       {std::tuple{"zbv", 4, 8}, std::tuple{"zbv", 4, 3}, std::tuple{"zbv", 3, 1},
        std::tuple{"zbv", 5, 13}, std::tuple{"dualpipev", 4, 8}, std::tuple{"dualpipev", 3, 11},
        std::tuple{"dualpipev", 2, 4}}) {
    INFO(name << " pp " << pp << " m " << m);
    const PipelineSchedule& schedule = *find_pipeline_schedule(name);
    for (std::int64_t s = 0; s < pp; ++s) check_passes_in_order(schedule.order({pp, 2, m}, s), m);
    // Dependencies across the V (stage p − 1 turns chunk 0 into chunk 1 locally, the loss on
    // stage 0) hold: the replay places every pass.
    CHECK(replay(name, {pp, 2, m}, {}).completed);
  }
  // DualPipeV's overlapped pairs need no pair of a neighbour first.
  CHECK(replay("dualpipev", {4, 2, 12}, {}, true, 1.5).completed);
  CHECK(replay("dualpipev", {3, 2, 6}, {}, true, 2.0).completed);
}

// A lower bound for any order on these placements: stage r cannot start before its first input
// has crossed r chunk forwards, and then still has all its work, so the step takes at least
// 2m(F + B + W) + (p − 1)·F. With T_F = T_B = T_W, the assumption the zero-bubble paper builds its
// handcrafted schedules on, ZB-V is "zero bubble" (Qi et al., arXiv:2401.10241, as ZB-H2 is:
// no stage waits once its first input arrived), so it meets the bound: (p − 1)·F per chunk, half
// of ZB-H2's (p − 1)·T_F per whole stage, at 1F1B's memory. 1F1B on the same layers runs one chunk
// of cost 2F, 2B, 2W per stage with bubble (p − 1)·2(F + B + W) (zero_bubble_schedule_test.cpp).
TEST_CASE("ZB-V with equal pass costs idles only while the pipeline fills, (p − 1)·F",
          "[models][schedule][v_shape]") {
  for (const double u : {1.0, 0.5}) {
    for (const auto& [pp, m] :
         {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 13}, std::pair{8, 32}}) {
      INFO("pp " << pp << " m " << m << " cost " << u);
      const Costs c{u, u, u};
      const Replay zbv = replay("zbv", {pp, 2, m}, c);
      REQUIRE(zbv.completed);
      CHECK(zbv.step == Approx(work(m, c) + (pp - 1) * u));
    }
  }
}

TEST_CASE("ZB-V with unequal pass costs stays between the fill and 1F1B's bubble",
          "[models][schedule][v_shape]") {
  for (const Costs c : {Costs{1, 2, 1}, Costs{1, 1.2, 0.8}, Costs{1, 1, 0.5}, Costs{2, 1, 1}}) {
    for (const auto& [pp, m] : {std::pair{4, 8}, std::pair{8, 32}}) {
      INFO("pp " << pp << " m " << m << " F " << c.f << " B " << c.b << " W " << c.w);
      const Replay zbv = replay("zbv", {pp, 2, m}, c);
      REQUIRE(zbv.completed);
      CHECK(zbv.step >= work(m, c) + (pp - 1) * c.f - 1e-9);
      CHECK(zbv.step < work(m, c) + (pp - 1) * 2 * (c.f + c.b + c.w));
    }
  }
}

// DualPipeV, where the builder runs forward and backward of a pair one after the other (dense
// models, the only ones schedules with W passes take: F&B = F + B + W per chunk). With equal
// costs it too meets the fill bound, (p − 1)·F. The DualPipe README's bubble
// (PP/2 − 1)(F&B + B − 3W) (DeepSeek-V3 Table 2, B there the whole backward B + W), with PP = 2p
// chunks, is (p − 1)(F + 2B − W): the replay stays within it.
TEST_CASE("DualPipeV with equal pass costs idles only while the pipeline fills",
          "[models][schedule][v_shape]") {
  for (const double u : {1.0, 0.5}) {
    for (const auto& [pp, m] :
         {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 13}, std::pair{8, 40}}) {
      INFO("pp " << pp << " m " << m << " cost " << u);
      const Costs c{u, u, u};
      const Replay dualpipev = replay("dualpipev", {pp, 2, m}, c);
      REQUIRE(dualpipev.completed);
      CHECK(dualpipev.step == Approx(work(m, c) + (pp - 1) * u));
    }
  }
  for (const Costs c : {Costs{1, 1, 0.5}, Costs{2, 2, 1}, Costs{1, 2, 1}, Costs{1, 1.2, 0.8}}) {
    for (const auto& [pp, m] : {std::pair{4, 8}, std::pair{8, 40}}) {
      INFO("pp " << pp << " m " << m << " F " << c.f << " B " << c.b << " W " << c.w);
      const Replay dualpipev = replay("dualpipev", {pp, 2, m}, c);
      REQUIRE(dualpipev.completed);
      CHECK(dualpipev.step >= work(m, c) + (pp - 1) * c.f - 1e-9);
      CHECK(dualpipev.step <= work(m, c) + (pp - 1) * (c.f + 2 * c.b - c.w) + 1e-9);
    }
  }
}

// Counting the orders (zero_bubble_v.cpp, dualpipe_v.cpp) on stage r: ZB-V's warm-up leaves
// 2(p − r) − 1 + 2r = 2p − 1 chunk forwards alive, its next F1 makes 2p, and from then on each F
// is followed by its chunk's B and W before the next F. DualPipeV's first two phases leave
// 2(p − r − 1) + 2(r + 1) = 2p alive; the third phase's B1 W F1 keeps 2p; the first overlapped pair
// adds its F before the W of its B: 2p + 1.
TEST_CASE("ZB-V holds 2p chunks on every stage, 1F1B's p micro-batches, DualPipeV 2p + 1",
          "[models][schedule][v_shape]") {
  for (const auto& [pp, m] : {std::pair{4, 8}, std::pair{4, 16}, std::pair{6, 15}}) {
    for (std::int64_t s = 0; s < pp; ++s) {
      INFO("pp " << pp << " m " << m << " stage " << s);
      const auto zbv = find_pipeline_schedule("zbv")->order({pp, 2, m}, s);
      const auto dualpipev = find_pipeline_schedule("dualpipev")->order({pp, 2, m}, s);
      // A chunk is half a stage: 2p chunks are p micro-batches of the stage (1F1B's stage 0).
      CHECK(peak_in_flight_chunks(zbv, true) == 2 * pp);
      // DeepSeek-V3 Table 2: PP + 1 chunks for DualPipe on PP ranks; here PP = 2p chunks.
      CHECK(peak_in_flight_chunks(dualpipev, true) == 2 * pp + 1);
    }
  }
}

TEST_CASE("V-shape schedules take vpp = 2, and DualPipeV at least 2p micro-batches",
          "[models][schedule][v_shape]") {
  const PipelineSchedule& zbv = *find_pipeline_schedule("zbv");
  const PipelineSchedule& dualpipev = *find_pipeline_schedule("dualpipev");
  CHECK(zbv.rejects({4, 2, 3}) == "");
  CHECK_THAT(zbv.rejects({4, 1, 8}),
             Catch::Contains("parallel.vpp = 1") && Catch::Contains("two model chunks per stage"));
  CHECK_THAT(zbv.rejects({4, 3, 8}), Catch::Contains("parallel.vpp = 3"));
  CHECK(dualpipev.rejects({4, 2, 8}) == "");
  CHECK_THAT(dualpipev.rejects({4, 1, 8}), Catch::Contains("parallel.vpp = 1"));
  CHECK_THAT(dualpipev.rejects({4, 2, 7}),
             Catch::Contains("7 micro-batches") && Catch::Contains("at least 2·pp = 8"));
  CHECK(zbv.splits_weight_gradients);
  CHECK(dualpipev.splits_weight_gradients);
  CHECK(dualpipev.pairs_backward_with_forward);
  CHECK_FALSE(zbv.pairs_backward_with_forward);
}

// Chunk 0 of each stage is its lower position, so stage s and its mirror pp − 1 − s hold the same
// layers in the same chunks.
TEST_CASE("DualPipe places position i of chain 0 on stage i and of chain 1 on stage pp − 1 − i",
          "[models][schedule][dualpipe]") {
  const VirtualStages v(*find_pipeline_schedule("dualpipe"), {4, 2, 8});
  REQUIRE(v.chains() == 2);
  CHECK(v.chain_length() == 4);
  CHECK(v.of(0, 0) == 0);  // chain 0 enters at stage 0
  CHECK(v.of(0, 1) == 7);  // chain 1 ends there
  CHECK(v.of(3, 0) == 4);  // chain 1 enters at the last stage, its lower position
  CHECK(v.of(3, 1) == 3);  // where chain 0 ends
  for (std::int64_t s = 0; s < 4; ++s) {
    for (std::int64_t c = 0; c < 2; ++c) {
      CHECK(v.position(v.of(s, c)) == v.position(v.of(3 - s, c)));  // mirrors hold the same
    }
  }
  CHECK(v.position(v.of(1, 1)) == 2);  // stage 1's second chunk holds stage 2's layers
  CHECK(v.first(0, 0));
  CHECK(v.last(3, 1));
  CHECK(v.first(3, 0));
  CHECK(v.last(0, 1));
  CHECK_FALSE(v.next(3, 1, +1));  // no transfer from chain 0's end into chain 1
  CHECK_FALSE(v.next(3, 0, -1));
  CHECK(v.next(2, 0, +1) == 6);  // chain 1 runs from stage 2 to stage 1
  CHECK(v.place(6).stage == 1);
}

TEST_CASE("DualPipe orders run F, B, W of every micro-batch on its chain and never deadlock",
          "[models][schedule][dualpipe]") {
  const PipelineSchedule& schedule = *find_pipeline_schedule("dualpipe");
  for (const auto& [pp, m] :
       {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 14}, std::pair{6, 12}, std::pair{8, 20}}) {
    INFO("pp " << pp << " m " << m);
    const VirtualStages v(schedule, {pp, 2, m});
    for (std::int64_t s = 0; s < pp; ++s)
      check_passes_in_order(schedule.order({pp, 2, m}, s), m, &v, s);
    CHECK(replay("dualpipe", {pp, 2, m}, {}).completed);
    CHECK(replay("dualpipe", {pp, 2, m}, {}, true, 1.5).completed);
  }
}

// Folded in half, DualPipe on pp ranks is DualPipeV on pp/2 with half the micro-batches
// (dualpipe.cpp): stage r and stage pp − 1 − r each run half-rank min(r, pp − 1 − r)'s order on
// their own chains, so with no transfer time every stage ends when that DualPipeV stage does.
// With equal costs u that is the fill bound: m(F + B + W) of work per stage (each micro-batch
// crosses one chunk of a whole stage) plus (pp/2 − 1)·u, the distance from the nearer end. The
// DualPipe README's bubble (PP/2 − 1)(F&B + B − 3W), with F&B = F + B + W when the pair runs one
// after the other and its B the whole backward B + W, is (pp/2 − 1)(F + 2B − W): the replay stays
// within it.
TEST_CASE("DualPipe runs as DualPipeV folded: bubble (pp/2 − 1)·F, within the README's bound",
          "[models][schedule][dualpipe]") {
  for (const Costs c :
       {Costs{1, 1, 1}, Costs{0.5, 0.5, 0.5}, Costs{1, 2, 1}, Costs{1, 1.2, 0.8}, Costs{2, 1, 1}}) {
    for (const auto& [pp, m] :
         {std::pair{2, 4}, std::pair{4, 8}, std::pair{4, 14}, std::pair{8, 16}, std::pair{8, 40}}) {
      INFO("pp " << pp << " m " << m << " F " << c.f << " B " << c.b << " W " << c.w);
      const Replay dualpipe = replay("dualpipe", {pp, 2, m}, c);
      const Replay folded = replay("dualpipev", {pp / 2, 2, m / 2}, c);
      REQUIRE(dualpipe.completed);
      CHECK(dualpipe.step == Approx(folded.step));
      CHECK(replay("dualpipe", {pp, 2, m}, c, true, c.f + c.b).step ==
            Approx(replay("dualpipev", {pp / 2, 2, m / 2}, c, true, c.f + c.b).step));
      const double work_per_stage = static_cast<double>(m) * (c.f + c.b + c.w);
      const double half = static_cast<double>(pp / 2 - 1);
      CHECK(dualpipe.step >= work_per_stage + half * c.f - 1e-9);
      CHECK(dualpipe.step <= work_per_stage + half * (c.f + 2 * c.b - c.w) + 1e-9);
      if (c.f == c.b && c.b == c.w) CHECK(dualpipe.step == Approx(work_per_stage + half * c.f));
    }
  }
}

// DeepSeek-V3 Table 2 and the DualPipe README: PP + 1 chunks of activations (a chunk is a whole
// stage here), against 1F1B's PP on its first stage; the same count as DualPipeV's 2p + 1 on
// p = pp/2.
TEST_CASE("DualPipe holds pp + 1 chunks on every stage", "[models][schedule][dualpipe]") {
  for (const auto& [pp, m] : {std::pair{4, 8}, std::pair{4, 16}, std::pair{8, 30}}) {
    for (std::int64_t s = 0; s < pp; ++s) {
      INFO("pp " << pp << " m " << m << " stage " << s);
      const auto order = find_pipeline_schedule("dualpipe")->order({pp, 2, m}, s);
      CHECK(peak_in_flight_chunks(order, true) == pp + 1);
    }
  }
}

TEST_CASE("DualPipe takes vpp = 2, an even pp and an even m of at least 2pp",
          "[models][schedule][dualpipe]") {
  const PipelineSchedule& dualpipe = *find_pipeline_schedule("dualpipe");
  CHECK(dualpipe.rejects({4, 2, 8}) == "");
  CHECK(dualpipe.rejects({2, 2, 4}) == "");
  CHECK_THAT(dualpipe.rejects({4, 1, 8}),
             Catch::Contains("parallel.vpp = 1") && Catch::Contains("one per direction"));
  CHECK_THAT(dualpipe.rejects({3, 2, 8}),
             Catch::Contains("parallel.pp = 3") && Catch::Contains("even pp"));
  CHECK_THAT(dualpipe.rejects({4, 2, 9}),
             Catch::Contains("9 micro-batches") && Catch::Contains("even number"));
  CHECK_THAT(dualpipe.rejects({4, 2, 6}), Catch::Contains("at least 2·pp = 8"));
  CHECK(dualpipe.splits_weight_gradients);
  CHECK(dualpipe.pairs_backward_with_forward);
  CHECK(dualpipe.chains == 2);
}
