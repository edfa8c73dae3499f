// "dualpipe": DualPipe, the bidirectional pipeline DeepSeek-V3 was trained with (arXiv:2412.19437
// §3.2.1; the order of DualPipe.step in deepseek-ai/DualPipe, dualpipe/dualpipe.py). The model is
// cut into pp positions and run as two pipelines over the same layers: chain 0 enters at stage 0
// (position i on stage i), chain 1 at stage pp − 1 (position i on stage pp − 1 − i). Every stage
// holds one chunk of each chain, so position i's parameters are on stage i and on stage
// pp − 1 − i: two copies (the README's "2×"), whose gradients are summed between the two stages
// before the optimizer step (the step builder reduces them as one data-parallel group of
// 2·dp·cp ranks). Chunk 0 of a stage is its lower position, min(s, pp − 1 − s), chunk 1 the
// higher, so stage s and its mirror pp − 1 − s hold the same layers in the same chunks (their
// gradient reductions then match bucket by bucket): on the first half of the stages chunk 0 is
// chain 0's, on the second half chain 1's. Micro-batches 0 … m/2 − 1 run chain 0, m/2 … m − 1
// chain 1; pp and m even, m ≥ 2·pp (the reference's asserts), vpp = 2 (two chunks per stage).
//
// Stage r and stage pp − 1 − r run the same order, DualPipeV's on half-rank h = min(r, pp − 1 − r)
// of pp/2 with m/2 micro-batches (dualpipe_v.cpp), DualPipeV's chunk c being chunk c here: the
// reference's phase 0 is the chain entering on the rank's side (the lower position), phase 1 the
// other. Folded, a micro-batch of chain 0 meets stages 0 … pp/2 − 1 as DualPipeV's chunk 0 on
// half-ranks 0 … pp/2 − 1 and stages pp/2 … pp − 1 as its chunk 1 back down, which is how
// DualPipeV is DualPipe cut in half. The README gives the bubble (PP/2 − 1)(F&B + B − 3W) and
// PP + 1 chunks of activations; the middle stages (pp/2 − 1 and pp/2) run their first forward
// and backward of the steady state one after the other as DualPipeV's last rank does.
#include "models/schedules/builtin_schedules.hpp"

namespace wallsim::models {
namespace {

std::vector<ScheduleItem> dualpipe_order(const PipelineShape& shape, std::int64_t stage) {
  const std::int64_t half = shape.pp / 2;
  const bool second_half = stage >= half;
  const std::int64_t half_rank = second_half ? shape.pp - 1 - stage : stage;
  const std::int64_t per_chain = shape.microbatches / 2;
  std::vector<ScheduleItem> items = dualpipe_v_order({half, 2, per_chain}, half_rank);
  for (ScheduleItem& item : items) {
    const std::int64_t chain = second_half ? 1 - item.chunk : item.chunk;
    item.microbatch += chain * per_chain;
  }
  return items;
}

// Chunk 0 is the stage's lower position: on stage s < pp/2 position s of chain 0, on the others
// position pp − 1 − s of chain 1 (virtual stage pp + position); chunk 1 the other chain's.
std::int64_t dualpipe_virtual_stage(const PipelineShape& shape, std::int64_t stage,
                                    std::int64_t chunk) {
  const std::int64_t chain = (stage >= shape.pp / 2) ? 1 - chunk : chunk;
  return chain == 0 ? stage : shape.pp + (shape.pp - 1 - stage);
}

std::string dualpipe_rejects(const PipelineShape& shape) {
  if (shape.vpp != 2) {
    return "parallel.vpp = " + std::to_string(shape.vpp) +
           ": \"dualpipe\" runs two model chunks per stage, one per direction (vpp = 2)";
  }
  if (shape.pp % 2 != 0) {
    return "parallel.pp = " + std::to_string(shape.pp) +
           ": \"dualpipe\" pairs stage r with stage pp − 1 − r and needs an even pp";
  }
  if (shape.microbatches % 2 != 0 || shape.microbatches < 2 * shape.pp) {
    return "training.global_batch gives " + std::to_string(shape.microbatches) +
           " micro-batches per pipeline; \"dualpipe\" needs an even number, at least 2·pp = " +
           std::to_string(2 * shape.pp) + " (half enter at each end)";
  }
  return "";
}

}  // namespace

PipelineSchedule dualpipe_schedule() {
  PipelineSchedule s;
  s.name = "dualpipe";
  s.summary =
      "DualPipe (DeepSeek): two pipelines in opposite directions, two parameter copies, "
      "vpp = 2, pp and m even, m >= 2pp";
  s.rejects = dualpipe_rejects;
  s.order = dualpipe_order;
  s.virtual_stage = dualpipe_virtual_stage;
  s.splits_weight_gradients = true;
  s.pairs_backward_with_forward = true;
  s.chains = 2;
  return s;
}

}  // namespace wallsim::models
