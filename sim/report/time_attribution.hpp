// Splitting one rank's step into busy compute, exposed communication, pipeline bubble and the
// rest (the walls of sim/report/README.md).
//
// The compute stream's ops run back to back; every gap between them (and before the first,
// and after the last up to the step's end) is time the stream waited. A gap ends when the
// dependency that finished last ended; that dependency decides where the gap goes:
//   * a pipeline receive: the part before the transfer started is bubble (the neighbouring
//     stage had not produced the data yet), the transfer itself is exposed `pp` time;
//   * another communication op: exposed time of its group (tp, cp, ep, dp);
//   * anything else (or nothing): `other`;
// and the part of the gap after every dependency and the stream were free is `host` time: the
// host had not issued the kernel yet (Op::host_cost, Op::host_sync).
// The trailing gap after the compute stream's last op goes to the op that ended last on the
// rank by the same rule.
#pragma once

#include "sim/graph/op_graph.hpp"
#include "sim/graph/replay.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim {

// `step_end` is the end of the whole step (every rank); `compute_stream` the stream whose
// gaps are attributed; `ideal_s` the rank's model FLOPs at the dense peak.
TimeSplit attribute_time(const OpGraph& graph, const RankTrace& trace, StreamIndex compute_stream,
                         Time step_end, double ideal_s);

// Compute time by op category on the compute stream (seconds), indexed by OpCategory.
std::array<double, kOpCategoryCount> compute_time_by_category(const OpGraph& graph,
                                                              const RankTrace& trace,
                                                              StreamIndex compute_stream);

}  // namespace wallsim
