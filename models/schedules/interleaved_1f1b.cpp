// "interleaved": Megatron-LM's interleaved 1F1B over vpp model chunks per stage (Narayanan et al.
// 2021 §2.2.2; schedules.py with microbatch_group_size_per_vp_stage = pp). Forwards follow the
// schedule table: groups of pp micro-batches, chunk-major within a group. Backwards take the
// same table with the chunk order reversed. Stage s warms up with 2·(pp − s − 1) + (vpp − 1)·pp
// forwards, or runs every forward first when m = pp. The micro-batches must be a multiple of pp
// (fewer than pp, or a remainder, Megatron-Core refuses).
#include "models/schedules/builtin_schedules.hpp"

#include <algorithm>

namespace wallsim::models {
namespace {

std::vector<ScheduleItem> schedule_table(const PipelineShape& shape, Pass pass) {
  std::vector<ScheduleItem> table;
  for (std::int64_t start = 0; start < shape.microbatches; start += shape.pp) {
    const std::int64_t end = std::min(start + shape.pp, shape.microbatches);
    for (std::int64_t chunk = 0; chunk < shape.vpp; ++chunk) {
      const std::int64_t placed = pass == Pass::kForward ? chunk : shape.vpp - 1 - chunk;
      for (std::int64_t mb = start; mb < end; ++mb) table.push_back({pass, mb, placed});
    }
  }
  return table;
}

std::vector<ScheduleItem> interleaved_order(const PipelineShape& shape, std::int64_t stage) {
  const auto forwards = schedule_table(shape, Pass::kForward);
  const auto backwards = schedule_table(shape, Pass::kBackward);
  const std::int64_t warmup = shape.microbatches == shape.pp
                                  ? static_cast<std::int64_t>(forwards.size())
                                  : 2 * (shape.pp - stage - 1) + (shape.vpp - 1) * shape.pp;
  return warmup_then_pairs(forwards, backwards, warmup);
}

std::string interleaved_rejects(const PipelineShape& shape) {
  if (shape.vpp <= 1) {
    return "parallel.vpp = 1: \"interleaved\" needs vpp > 1 model chunks per stage";
  }
  // Megatron-Core runs the micro-batches in groups of pp per model chunk
  // (microbatch_group_size_per_vp_stage = pp), refuses a group larger than the micro-batches
  // and a last group smaller than pp (schedules.py, forward_backward_pipelining_with_interleaving):
  // a remainder leaves stages waiting on activations that no group sends.
  if (shape.microbatches < shape.pp) {
    return "training.global_batch gives " + std::to_string(shape.microbatches) +
           " micro-batches per pipeline, fewer than pp = " + std::to_string(shape.pp) +
           "; the interleaved schedule needs at least pp (Megatron-Core groups them by pp per "
           "model chunk)";
  }
  if (shape.microbatches % shape.pp != 0) {
    return "training.global_batch gives " + std::to_string(shape.microbatches) +
           " micro-batches per pipeline; the interleaved schedule needs a multiple of pp = " +
           std::to_string(shape.pp) +
           " (Megatron-Core groups them by pp per model chunk and refuses a smaller last group)";
  }
  return "";
}

}  // namespace

PipelineSchedule interleaved_1f1b_schedule() {
  PipelineSchedule s;
  s.name = "interleaved";
  s.summary = "interleaved 1F1B (Megatron-LM), vpp > 1 model chunks per stage";
  s.rejects = interleaved_rejects;
  s.order = interleaved_order;
  s.virtual_stage = chunk_major_virtual_stage;
  s.pairs_backward_with_forward = true;
  return s;
}

}  // namespace wallsim::models
