// "zbv": ZB-V, the handcrafted V-shape schedule of Qi et al., "Zero Bubble Pipeline Parallelism"
// (ICLR 2024, arXiv:2401.10241), the member of the V-shape family of "Pipeline Parallelism with
// Controllable Memory" (Qi et al. 2024, arXiv:2405.15362) that keeps 1F1B's activation memory.
// Each stage holds two chunks in a V (v_shape_virtual_stage): the forward runs down chunk 0 of
// stages 0 … p − 1 and back up chunk 1 of stages p − 1 … 0, where the loss is. B and W are split.
//
// Stage r (of p) runs, following the authors' handcrafted generator
// (sail-sg/zero-bubble-pipeline-parallelism, megatron/core/pipeline_parallel/handcrafted_zb_v):
//  * warm-up: 2(p − r) − 1 chunk-0 forwards, then r pairs F1 F0, then p − r triples F1 B1 W1;
//  * steady state: F0 (while any remain) B0 W0 F1 B1 W1, until every forward has run;
//  * cool-down: r pairs B0 B1, p − r pairs B0 W0 (the oldest chunk-0 W left), then the chunk-1
//    W left, then the chunk-0 W left.
// The generator lays this out for max(m, 2p − 1) micro-batches and drops those past m, so any
// m runs (fewer than 2p − 1 leave part of the warm-up idle). With m ≥ 2p every stage holds at
// most 2p chunks between F and W: p micro-batches of a whole stage, 1F1B's peak (its stage 0's)
// on every stage. With equal F, B and W costs (the paper's assumption) no stage idles once its
// first input has arrived: the bubble is the fill, p − 1 chunk forwards, checked with the orders
// replayed in tests/unit/models/v_schedule_test.cpp.
#include <algorithm>

#include "models/schedules/builtin_schedules.hpp"

namespace wallsim::models {
namespace {

// Counters of the passes placed so far, per chunk.
struct VOrder {
  std::vector<ScheduleItem> items;
  std::int64_t forwards[2] = {0, 0};
  std::int64_t backwards[2] = {0, 0};
  std::int64_t weights[2] = {0, 0};

  void forward(std::int64_t chunk) { items.push_back({Pass::kForward, forwards[chunk]++, chunk}); }
  void backward(std::int64_t chunk) {
    items.push_back({Pass::kBackward, backwards[chunk]++, chunk});
  }
  void weight(std::int64_t chunk) { items.push_back({Pass::kWeight, weights[chunk]++, chunk}); }
};

std::vector<ScheduleItem> zero_bubble_v_order(const PipelineShape& shape, std::int64_t r) {
  const std::int64_t p = shape.pp;
  const std::int64_t laid_out = std::max(shape.microbatches, 2 * p - 1);
  VOrder o;
  for (std::int64_t i = 0; i < 2 * (p - r) - 1; ++i) o.forward(0);
  for (std::int64_t i = 0; i < r; ++i) {
    o.forward(1);
    o.forward(0);
  }
  for (std::int64_t i = 0; i < p - r; ++i) {
    o.forward(1);
    o.backward(1);
    o.weight(1);
  }
  while (o.forwards[1] < o.forwards[0] || o.forwards[0] < laid_out) {
    if (o.forwards[0] < laid_out) o.forward(0);
    o.backward(0);
    o.weight(0);
    o.forward(1);
    o.backward(1);
    o.weight(1);
  }
  for (std::int64_t i = 0; i < r; ++i) {
    o.backward(0);
    o.backward(1);
  }
  for (std::int64_t i = 0; i < p - r; ++i) {
    o.backward(0);
    o.weight(0);
  }
  while (o.weights[1] < o.backwards[1]) o.weight(1);
  while (o.weights[0] < o.backwards[0]) o.weight(0);
  std::erase_if(o.items,
                [&](const ScheduleItem& item) { return item.microbatch >= shape.microbatches; });
  return o.items;
}

std::string zero_bubble_v_rejects(const PipelineShape& shape) {
  if (shape.vpp == 2) return "";
  return "parallel.vpp = " + std::to_string(shape.vpp) +
         ": \"zbv\" runs two model chunks per stage in a V (vpp = 2)";
}

}  // namespace

PipelineSchedule zero_bubble_v_schedule() {
  PipelineSchedule s;
  s.name = "zbv";
  s.summary = "zero-bubble V (ZB-V): two chunks per stage in a V, B and W split, 1F1B's memory";
  s.rejects = zero_bubble_v_rejects;
  s.order = zero_bubble_v_order;
  s.virtual_stage = v_shape_virtual_stage;
  s.splits_weight_gradients = true;
  return s;
}

}  // namespace wallsim::models
