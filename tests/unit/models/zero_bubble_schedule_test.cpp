// The zero-bubble schedules (Qi et al., ICLR 2024, arXiv:2401.10241 §3.1) against the paper's
// closed forms: their per-stage orders are replayed with uniform pass costs and no
// communication time, as the paper's handcrafted analysis assumes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <utility>

#include "models/pipeline_schedule.hpp"

using namespace wallsim::models;

namespace {

struct Costs {
  double f = 1, b = 1, w = 1;
};

// Step time of `name` on pp stages and m micro-batches: each stage runs its order in sequence;
// F of stage s waits for F of s − 1, B of s for B of s + 1 (the last stage's B for its own F);
// a schedule without W passes runs W inside B (cost b + w), as 1F1B does.
double step_time(const std::string& name, std::int64_t pp, std::int64_t m, Costs c) {
  const PipelineSchedule* schedule = find_pipeline_schedule(name);
  REQUIRE(schedule != nullptr);
  const double b_cost = schedule->splits_weight_gradients ? c.b : c.b + c.w;
  std::vector<std::vector<ScheduleItem>> orders;
  for (std::int64_t s = 0; s < pp; ++s) orders.push_back(schedule->order({pp, 1, m}, s));
  std::map<std::pair<std::int64_t, std::int64_t>, double> f_end, b_end;
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> free_at(static_cast<std::size_t>(pp), 0.0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::int64_t s = 0; s < pp; ++s) {
      const auto& order = orders[static_cast<std::size_t>(s)];
      auto& i = next[static_cast<std::size_t>(s)];
      for (; i < order.size(); ++i) {
        const ScheduleItem& item = order[i];
        double ready = 0, cost = c.w;
        if (item.pass == Pass::kForward) {
          cost = c.f;
          if (s > 0) {
            const auto it = f_end.find({s - 1, item.microbatch});
            if (it == f_end.end()) break;
            ready = it->second;
          }
        } else if (item.pass == Pass::kBackward) {
          cost = b_cost;
          const auto it =
              s + 1 < pp ? b_end.find({s + 1, item.microbatch}) : f_end.find({s, item.microbatch});
          if (it == (s + 1 < pp ? b_end.end() : f_end.end())) break;
          ready = it->second;
        }
        double& t = free_at[static_cast<std::size_t>(s)];
        t = std::max(t, ready) + cost;
        if (item.pass == Pass::kForward) f_end[{s, item.microbatch}] = t;
        if (item.pass == Pass::kBackward) b_end[{s, item.microbatch}] = t;
        progress = true;
      }
    }
  }
  for (std::int64_t s = 0; s < pp; ++s) {
    REQUIRE(next[static_cast<std::size_t>(s)] == orders[static_cast<std::size_t>(s)].size());
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace

// The same forms in the DeepSeek-V3 report's notation (arXiv:2412.19437 Table 2, B there the
// full backward = T_B + T_W here): 1F1B (p − 1)(F + B), ZB1P (p − 1)(F + B − 2W).
TEST_CASE("ZB-H1's bubble is (p − 1)(T_F + T_B − T_W) against 1F1B's (p − 1)(T_F + T_B + T_W)",
          "[models][schedule][zero_bubble]") {
  for (const Costs c : {Costs{1, 1, 1}, Costs{1, 2, 1}, Costs{1, 1.2, 0.8}, Costs{1, 1, 0.5}}) {
    for (const auto& [pp, m] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{4, 4}}) {
      INFO("pp " << pp << " m " << m << " F " << c.f << " B " << c.b << " W " << c.w);
      const double work = m * (c.f + c.b + c.w);
      CHECK(step_time("1f1b", pp, m, c) == Approx(work + (pp - 1) * (c.f + c.b + c.w)));
      CHECK(step_time("zb_h1", pp, m, c) == Approx(work + (pp - 1) * (c.f + c.b - c.w)));
      // ZB-H2: no stage idles once its first forward arrives, given the 2p − 1 micro-batches
      // its warm-up needs.
      if (m >= 2 * pp - 1) CHECK(step_time("zb_h2", pp, m, c) == Approx(work + (pp - 1) * c.f));
    }
  }
}

TEST_CASE("ZB-H1 holds 1F1B's peak of p micro-batches on every stage, ZB-H2 2p − 1",
          "[models][schedule][zero_bubble]") {
  const std::int64_t pp = 4, m = 16;
  for (std::int64_t s = 0; s < pp; ++s) {
    INFO("stage " << s);
    const auto h1 = find_pipeline_schedule("zb_h1")->order({pp, 1, m}, s);
    const auto h2 = find_pipeline_schedule("zb_h2")->order({pp, 1, m}, s);
    CHECK(peak_in_flight_chunks(h1, true) == pp);
    CHECK(peak_in_flight_chunks(h2, true) == 2 * pp - 1);
    // Every micro-batch runs F, then B, then W.
    for (const auto* order : {&h1, &h2}) {
      std::map<std::int64_t, int> seen;
      for (const ScheduleItem& item : *order) {
        CHECK(seen[item.microbatch] == static_cast<int>(item.pass));
        ++seen[item.microbatch];
      }
      CHECK(seen.size() == static_cast<std::size_t>(m));
    }
  }
}

TEST_CASE("zero-bubble schedules run one chunk per stage", "[models][schedule][zero_bubble]") {
  CHECK(find_pipeline_schedule("zb_h1")->rejects({4, 2, 8}) != "");
  CHECK(find_pipeline_schedule("zb_h2")->rejects({4, 1, 8}) == "");
  CHECK(find_pipeline_schedule("zb_h1")->splits_weight_gradients);
}
