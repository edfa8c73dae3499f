// The compact timeline the HTML report draws: for each representative rank, its ops (stream,
// category, start, duration, label) and its memory in use over time.
//
// Written as `timeline.json` beside summary.json so `wallsim report DIR` can re-render the
// page without re-simulating. Shape (times in microseconds, memory in GiB):
//   {"version": 1, "step_s": s, "streams": [names], "categories": [names],
//    "ranks": [{"name": "pp0 tp0 cp0 dp0", "rank": 0, "stage": 0, "labels": [names],
//               "ops": [stream, category, start_us, duration_us, label, ...],   // flat, 5 each
//               "memory": [t_us, GiB, ...]}]}                                  // flat, 2 each
// Memory samples beyond `kTimelineMemoryPoints` are thinned to the lowest and highest value
// of each time bucket, so the peak survives.
#pragma once

#include <iosfwd>

#include "sim/report/trace_input.hpp"

namespace wallsim {

inline constexpr int kTimelineMemoryPoints = 4000;

void write_timeline_json(const TraceInput& input, std::ostream& out);

}  // namespace wallsim
