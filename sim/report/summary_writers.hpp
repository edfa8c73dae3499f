// Writers for RunSummary: summary.json (README.md, `wallsim run`) and the console summary.
// Both write to an injected stream; the same summary always gives the same bytes.
#pragma once

#include <iosfwd>

#include "sim/report/run_summary.hpp"

namespace wallsim {

void write_summary_json(const RunSummary& summary, std::ostream& out);
void write_summary_text(const RunSummary& summary, std::ostream& out);

}  // namespace wallsim
