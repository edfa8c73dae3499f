// Files of a run's output directory (README.md, `wallsim run` and "Reports"): summary.json,
// timeline.json (the report's compact timeline, sim/report/timeline.hpp), trace.json and
// report.html; shared by `wallsim run --out` and `wallsim report`.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>

namespace wallsim::cli {

// Writes `path` through `write`; InputError naming `option` when it cannot.
std::uintmax_t write_output_file(const std::string& path, const std::string& option,
                                 const std::function<void(std::ostream&)>& write);

// The whole file; InputError naming `option` when it cannot be read.
std::string read_input_file(const std::string& path, const std::string& option);

// report.html beside summary.json in `dir` from its summary.json and timeline.json (if any).
void render_report(const std::string& summary_path, const std::string& timeline_path,
                   const std::string& html_path);

// "12.3 MB"
std::string human_size(std::uintmax_t bytes);

}  // namespace wallsim::cli
