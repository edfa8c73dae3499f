// "1f1b": PipeDream-flush with one model chunk per stage (Narayanan et al. 2021 §2.2; Megatron-LM
// forward_backward_pipelining_without_interleaving). Stage s runs min(pp − s − 1, m) warm-up
// forwards, then forward/backward pairs, then the remaining backwards; micro-batches go in order.
#include "models/schedules/builtin_schedules.hpp"

namespace wallsim::models {
namespace {

std::vector<ScheduleItem> one_f_one_b_order(const PipelineShape& shape, std::int64_t stage) {
  std::vector<ScheduleItem> forwards, backwards;
  for (std::int64_t mb = 0; mb < shape.microbatches; ++mb) {
    forwards.push_back({Pass::kForward, mb, 0});
    backwards.push_back({Pass::kBackward, mb, 0});
  }
  return warmup_then_pairs(forwards, backwards, shape.pp - stage - 1);
}

std::string one_f_one_b_rejects(const PipelineShape& shape) {
  if (shape.vpp == 1) return "";
  return "parallel.vpp = " + std::to_string(shape.vpp) +
         ": \"1f1b\" runs one model chunk per stage; several chunks need \"interleaved\"";
}

}  // namespace

PipelineSchedule one_f_one_b_schedule() {
  PipelineSchedule s;
  s.name = "1f1b";
  s.summary = "one forward / one backward (PipeDream-flush), one model chunk per stage";
  s.rejects = one_f_one_b_rejects;
  s.order = one_f_one_b_order;
  s.virtual_stage = chunk_major_virtual_stage;
  return s;
}

}  // namespace wallsim::models
