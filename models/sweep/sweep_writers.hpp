// sweep.csv, sweep.json and the console summary of a sweep. Each writes to an injected stream;
// the same report always gives the same bytes.
#pragma once

#include <iosfwd>

#include "models/sweep/sweep_report.hpp"

namespace wallsim::models {

// One header line, then one line per row in the report's order (rank 1 = fastest). Columns:
// rank, id, tp, sp, cp, pp, vpp, dp, micro_batch, num_microbatches, recompute,
// distributed_optimizer, overlap, step_time_s, tokens_per_s_per_gpu, mfu, peak_bytes, hbm_bytes,
// fits_in_memory, binding, error, config.
void write_sweep_csv(const SweepReport& report, std::ostream& out);
void write_sweep_json(const SweepReport& report, std::ostream& out);
// Counts per stage, the `top` fastest rows and how to run the best one.
void write_sweep_text(const SweepReport& report, std::ostream& out, std::size_t top = 10);

// Bytes as "74.8 GiB" (shared with the HTML writer).
std::string format_gib(double bytes);

}  // namespace wallsim::models
