// "zb_h1" and "zb_h2": the handcrafted zero-bubble schedules of Qi et al., "Zero Bubble Pipeline
// Parallelism" (ICLR 2024, arXiv:2401.10241) §3.1, one model chunk per stage, with the backward
// split into B (input gradients) and W (weight gradients).
//
// Stage s (of p) runs w_s warm-up forwards, then for each micro-batch k in order: the next
// forward (while any remain), B_k, and W_{k − d_s} once k ≥ d_s; the remaining W last.
//  * ZB-H1: w_s = p − 1 − s (1F1B's warm-up), d_s = s. Stage s holds at most
//    (p − 1 − s) + 1 + s = p micro-batches between F and W, 1F1B's peak (stage 0's) on every
//    stage. With uniform costs T_F, T_B, T_W per stage and no communication time the step takes
//    m(T_F + T_B + T_W) + (p − 1)(T_F + T_B − T_W), the paper's ZB-H1 bubble, against 1F1B's
//    (p − 1)(T_F + T_B + T_W): the later stages defer W so the first backwards reach stage 0
//    sooner, and the deferred W fill the drain.
//  * ZB-H2: w_s = 2(p − 1 − s), d_s = 2s: at most 2p − 1 micro-batches in flight on every stage
//    (the paper's ZB-H2 memory), and the step takes m(T_F + T_B + T_W) + (p − 1)T_F: after the
//    first forward reaches stage s, no stage idles.
// Both closed forms are checked in tests/unit/models/zero_bubble_schedule_test.cpp by replaying
// the orders with unit costs.
#include <algorithm>

#include "models/schedules/builtin_schedules.hpp"

namespace wallsim::models {
namespace {

std::vector<ScheduleItem> delayed_weight_order(const PipelineShape& shape, std::int64_t warmup,
                                               std::int64_t delay) {
  const std::int64_t m = shape.microbatches;
  std::vector<ScheduleItem> order;
  std::int64_t forwards = 0, weights = 0;
  for (; forwards < std::min(warmup, m); ++forwards) order.push_back({Pass::kForward, forwards, 0});
  for (std::int64_t k = 0; k < m; ++k) {
    if (forwards < m) order.push_back({Pass::kForward, forwards++, 0});
    order.push_back({Pass::kBackward, k, 0});
    if (k >= delay) order.push_back({Pass::kWeight, weights++, 0});
  }
  while (weights < m) order.push_back({Pass::kWeight, weights++, 0});
  return order;
}

std::string one_chunk_rejects(const PipelineShape& shape, const std::string& name) {
  if (shape.vpp == 1) return "";
  return "parallel.vpp = " + std::to_string(shape.vpp) + ": \"" + name +
         "\" runs one model chunk per stage";
}

PipelineSchedule zero_bubble_schedule(const std::string& name, const std::string& summary,
                                      std::int64_t warmup_factor, std::int64_t delay_factor) {
  PipelineSchedule s;
  s.name = name;
  s.summary = summary;
  s.rejects = [name](const PipelineShape& shape) { return one_chunk_rejects(shape, name); };
  s.order = [warmup_factor, delay_factor](const PipelineShape& shape, std::int64_t stage) {
    return delayed_weight_order(shape, warmup_factor * (shape.pp - 1 - stage),
                                delay_factor * stage);
  };
  s.virtual_stage = chunk_major_virtual_stage;
  s.splits_weight_gradients = true;
  return s;
}

}  // namespace

PipelineSchedule zb_h1_schedule() {
  return zero_bubble_schedule(
      "zb_h1", "zero-bubble H1: 1F1B with weight gradients deferred, 1F1B's peak memory", 1, 1);
}

PipelineSchedule zb_h2_schedule() {
  return zero_bubble_schedule(
      "zb_h2", "zero-bubble H2: deeper warm-up and deferred weight gradients, 2p - 1 in flight", 2,
      2);
}

}  // namespace wallsim::models
