// The order in which one pipeline stage runs forward and backward passes, as Megatron-LM's
// schedules.py issues them, and the activation bytes that order keeps alive.
//
//  * 1F1B (PipeDream-flush): warm-up of min(pp − stage − 1, m) forwards, then one forward /
//    one backward pairs, then the remaining backwards; stage s holds at most min(pp − s, m)
//    micro-batches (Narayanan et al. 2021 §2.2).
//  * Interleaved 1F1B (vpp > 1): forwards follow Megatron's schedule table (groups of
//    pp micro-batches, chunk-major within a group); backwards the same with the chunk order
//    reversed; warm-up 2·(pp − stage − 1) + (vpp − 1)·pp forwards, or everything when m = pp
//    (schedules.py, microbatch_group_size_per_vp_stage = pp).
#pragma once

#include <cstdint>
#include <vector>

namespace wallsim::models {

struct ScheduleStep {
  bool forward = true;
  std::int64_t microbatch = 0;
  std::int64_t chunk = 0;
};

std::vector<ScheduleStep> stage_schedule(std::int64_t pp, std::int64_t vpp,
                                         std::int64_t microbatches, std::int64_t stage);

// The most bytes held at once: a forward of chunk c adds chunk_bytes[c] until its backward.
double peak_in_flight_bytes(const std::vector<ScheduleStep>& schedule,
                            const std::vector<double>& chunk_bytes);

// The largest number of (micro-batch, chunk) forwards alive at once.
std::int64_t peak_in_flight_chunks(const std::vector<ScheduleStep>& schedule);

}  // namespace wallsim::models
