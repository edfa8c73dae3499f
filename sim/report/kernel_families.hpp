// Where a rank's compute time went, kernel family by kernel family: how long each family kept
// the compute stream busy, how close its kernels came to the GPU's peak (FLOP/s for GEMMs and
// attention, HBM bandwidth for memory-bound kernels), and how long the stream sat idle
// waiting for the host to issue it.
#pragma once

#include <vector>

#include "sim/graph/op_graph.hpp"
#include "sim/graph/replay.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim {

// Every family with a compute op on `compute_stream`, by time descending, ties by family name
// then kind. Busy time is each op's replayed start to end; host wait is the host part of the
// gap before each op as attribute_time charges it, so the families' host_wait_s add up to
// TimeSplit::host_s and their time_s to TimeSplit::compute_s.
std::vector<KernelFamily> kernel_families(const OpGraph& graph, const RankTrace& trace,
                                          StreamIndex compute_stream, const KernelRates& rates);

}  // namespace wallsim
