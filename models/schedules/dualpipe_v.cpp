// "dualpipev": DualPipeV, DeepSeek-V3's DualPipe (arXiv:2412.19437 §3.2.1) cut in half: the two
// pipeline directions of DualPipe on 2p ranks folded onto p ranks, each holding two chunks in a V
// (v_shape_virtual_stage), so no rank keeps DualPipe's second copy of the parameters. The order
// follows DualPipeV.step of deepseek-ai/DualPipe (dualpipe/dualpipev.py). On rank r of p, with
// m ≥ 2p micro-batches (the step asserts num_chunks >= 2·num_ranks):
//  1. 2(p − r − 1) chunk-0 forwards;
//  2. r + 1 pairs F0 F1;
//  3. p − r − 1 times: B1 with its W deferred, the oldest deferred W, F1;
//  4. m − 2p + r + 1 times: F0 overlapped with B1, then F1 overlapped with B0 (on the last rank
//     the first F0 and B1 run one after the other);
//  5. p − r − 1 times: B1, then F1 overlapped with B0;
//  6. r + 1 pairs B1 B0, the second half of them deferring W (from the middle pair on; on odd
//     ranks from its B1, on even ranks from its B0);
//  7. p − r − 1 times: the oldest deferred W, then B0 deferring its W;
//  8. the r + 1 deferred W left, oldest first.
// A backward whose W is not deferred runs it right after (the W item follows its B). An
// overlapped pair is a B directly followed by the F of another micro-batch; the step builder runs
// such pairs as one combined pass when it overlaps the EP all-to-all (pipeline_ops.hpp).
//
// DeepSeek-V3 Table 2 and the repository's README give DualPipe (PP ranks, two copies of the
// parameters, PP + 1 micro-batch chunks of activations) a bubble of (PP/2 − 1)(F&B + B − 3W);
// DualPipeV runs the same schedule with PP = 2p chunks on p ranks: one copy of the parameters, at
// most 2p + 1 chunks (p + 1/2 micro-batches of a whole stage) in flight on every rank, and the
// README's bubble becomes (p − 1)(F&B + B − 3W) with F, B (the whole backward), W per chunk.
// Replayed with uniform costs (tests/unit/models/v_schedule_test.cpp) the order stays within that
// figure for the cost ratios tested there, and with equal F, B and W idles only while the
// pipeline fills: (p − 1)·F.
#include <deque>

#include "models/schedules/builtin_schedules.hpp"

namespace wallsim::models {
namespace {

class DualPipeVOrder {
 public:
  std::vector<ScheduleItem> items;

  void forward(std::int64_t chunk) { items.push_back({Pass::kForward, forwards_[chunk]++, chunk}); }
  // B of `chunk`; its W right after it unless deferred.
  void backward(std::int64_t chunk, bool defer_weight) {
    const ScheduleItem b{Pass::kBackward, backwards_[chunk]++, chunk};
    items.push_back(b);
    if (defer_weight) {
      deferred_.push_back(b);
    } else {
      items.push_back({Pass::kWeight, b.microbatch, chunk});
    }
  }
  void oldest_deferred_weight() {
    items.push_back({Pass::kWeight, deferred_.front().microbatch, deferred_.front().chunk});
    deferred_.pop_front();
  }
  // F of `forward_chunk` overlapped with B of `backward_chunk` (a whole backward: its W follows).
  void overlapped(std::int64_t forward_chunk, std::int64_t backward_chunk) {
    const ScheduleItem b{Pass::kBackward, backwards_[backward_chunk]++, backward_chunk};
    items.push_back(b);
    forward(forward_chunk);
    items.push_back({Pass::kWeight, b.microbatch, backward_chunk});
  }

 private:
  std::int64_t forwards_[2] = {0, 0};
  std::int64_t backwards_[2] = {0, 0};
  std::deque<ScheduleItem> deferred_;
};

void steady_state(DualPipeVOrder& o, const PipelineShape& shape, std::int64_t r) {
  const std::int64_t p = shape.pp;
  for (std::int64_t i = 0; i < shape.microbatches - 2 * p + r + 1; ++i) {
    if (i == 0 && r == p - 1) {
      o.forward(0);
      o.backward(1, false);
    } else {
      o.overlapped(0, 1);
    }
    o.overlapped(1, 0);
  }
  for (std::int64_t i = 0; i < p - r - 1; ++i) {
    o.backward(1, false);
    o.overlapped(1, 0);
  }
}

}  // namespace

std::vector<ScheduleItem> dualpipe_v_order(const PipelineShape& shape, std::int64_t r) {
  const std::int64_t p = shape.pp;
  DualPipeVOrder o;
  for (std::int64_t i = 0; i < 2 * (p - r - 1); ++i) o.forward(0);
  for (std::int64_t i = 0; i < r + 1; ++i) {
    o.forward(0);
    o.forward(1);
  }
  for (std::int64_t i = 0; i < p - r - 1; ++i) {
    o.backward(1, true);
    o.oldest_deferred_weight();
    o.forward(1);
  }
  steady_state(o, shape, r);
  const std::int64_t pairs = r + 1;
  for (std::int64_t i = 0; i < pairs; ++i) {
    const bool half = i >= pairs / 2;
    o.backward(1, half && (r % 2 == 1 || i > pairs / 2));
    o.backward(0, half);
  }
  for (std::int64_t i = 0; i < p - r - 1; ++i) {
    o.oldest_deferred_weight();
    o.backward(0, true);
  }
  for (std::int64_t i = 0; i < r + 1; ++i) o.oldest_deferred_weight();
  return o.items;
}

namespace {

std::string dualpipe_v_rejects(const PipelineShape& shape) {
  if (shape.vpp != 2) {
    return "parallel.vpp = " + std::to_string(shape.vpp) +
           ": \"dualpipev\" runs two model chunks per stage in a V (vpp = 2)";
  }
  if (shape.microbatches < 2 * shape.pp) {
    return "training.global_batch gives " + std::to_string(shape.microbatches) +
           " micro-batches per pipeline; \"dualpipev\" needs at least 2·pp = " +
           std::to_string(2 * shape.pp);
  }
  return "";
}

}  // namespace

PipelineSchedule dualpipe_v_schedule() {
  PipelineSchedule s;
  s.name = "dualpipev";
  s.summary = "DualPipeV (DeepSeek): DualPipe folded into a V, two chunks per stage, m >= 2pp";
  s.rejects = dualpipe_v_rejects;
  s.order = dualpipe_v_order;
  s.virtual_stage = v_shape_virtual_stage;
  s.splits_weight_gradients = true;
  s.pairs_backward_with_forward = true;
  return s;
}

}  // namespace wallsim::models
