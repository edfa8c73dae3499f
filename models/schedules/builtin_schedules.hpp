// The pipeline schedules registered at start-up (models/pipeline_schedule.hpp), one file each.
#pragma once

#include "models/pipeline_schedule.hpp"

namespace wallsim::models {

PipelineSchedule one_f_one_b_schedule();       // "1f1b": one_f_one_b.cpp
PipelineSchedule interleaved_1f1b_schedule();  // "interleaved": interleaved_1f1b.cpp
PipelineSchedule zb_h1_schedule();             // "zb_h1": zero_bubble.cpp
PipelineSchedule zb_h2_schedule();             // "zb_h2": zero_bubble.cpp
PipelineSchedule zero_bubble_v_schedule();     // "zbv": zero_bubble_v.cpp
PipelineSchedule dualpipe_v_schedule();        // "dualpipev": dualpipe_v.cpp
PipelineSchedule dualpipe_schedule();          // "dualpipe": dualpipe.cpp

// DualPipeV's order on stage `stage` (dualpipe_v.cpp); DualPipe runs it on each half of its
// ranks.
std::vector<ScheduleItem> dualpipe_v_order(const PipelineShape& shape, std::int64_t stage);

}  // namespace wallsim::models
