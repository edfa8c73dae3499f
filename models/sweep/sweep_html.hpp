// sweep.html: a self-contained page (inline SVG and CSS, no scripts from anywhere) with the
// Pareto front of throughput against peak memory, the fastest layouts with the command that
// reruns each, and how each knob moves the best throughput.
#pragma once

#include <iosfwd>
#include <vector>

#include "models/sweep/sweep_report.hpp"

namespace wallsim::models {

// Rows no other row beats on both axes: nobody has higher tokens/s/GPU at no more peak memory.
// Ordered by peak memory ascending; failed rows and rows that do not fit are left out.
std::vector<SweepRow> pareto_front(const std::vector<SweepRow>& rows);

void write_sweep_html(const SweepReport& report, std::ostream& out);

}  // namespace wallsim::models
