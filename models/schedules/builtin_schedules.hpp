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

}  // namespace wallsim::models
