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

#include <functional>

#include "sim/graph/op_graph.hpp"
#include "sim/graph/replay.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim {

// One compute op of the compute stream as the attribution sees it. The stream sat idle from
// `idle_from` (the previous compute op's end) to the op's start: until `issued_from` waiting
// for the stream and the op's dependencies, from there on for the host to issue the op
// (`issued_from` equals the start when the host was not late).
struct ComputeOpWait {
  OpIndex op = 0;
  Time idle_from;
  Time issued_from;
};

// Calls `visit` for each compute op of `compute_stream`, in stream order; attribute_time and
// the kernel families both read the stream through it, so they agree on the host's share.
void for_each_compute_op(const OpGraph& graph, const RankTrace& trace, StreamIndex compute_stream,
                         const std::function<void(const ComputeOpWait&)>& visit);

// `step_end` is the end of the whole step (every rank); `compute_stream` the stream whose
// gaps are attributed; `ideal_s` the rank's model FLOPs at the dense peak.
TimeSplit attribute_time(const OpGraph& graph, const RankTrace& trace, StreamIndex compute_stream,
                         Time step_end, double ideal_s);

// Compute time by op category on the compute stream (seconds), indexed by OpCategory.
std::array<double, kOpCategoryCount> compute_time_by_category(const OpGraph& graph,
                                                              const RankTrace& trace,
                                                              StreamIndex compute_stream);

}  // namespace wallsim
