// Chrome trace event format (opens in Perfetto and chrome://tracing) of the traced ranks.
//
// One process per rank (pid = global rank, named by its coordinates), one thread per stream
// (tid = stream index). Every op is a complete event ("X") with its label, category and args
// (micro-batch, layer, FLOPs; communication: op, bytes, group size, tier). Members of one
// collective instance (the k-th collective each traced member issued on a replay group, in
// start order) and both sides of a pipeline transfer are linked by flow events ("s", "t",
// "f", bound to the enclosing slice). Counter tracks ("C") per rank: memory in use (GiB) and
// the link bandwidth its communication kernels are sending (GB/s, NVLink and network).
//
// Timestamps are microseconds printed with nanosecond resolution; an event's end is rounded
// the same way as its start, so slices of one stream never overlap. The same input always
// writes the same bytes.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "sim/report/trace_input.hpp"

namespace wallsim {

struct TraceStats {
  std::uint64_t events = 0;  // every entry of traceEvents
  std::uint64_t slices = 0;  // complete events (ops)
  std::uint64_t flows = 0;   // linked collective instances and transfers
};

TraceStats write_chrome_trace(const TraceInput& input, std::ostream& out);

}  // namespace wallsim
