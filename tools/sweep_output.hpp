// Writing a sweep's output folder: sweep.csv, sweep.json, sweep.html and configs/<id>.json (the
// run config that reproduces each row).
#pragma once

#include <string>

#include "models/sweep/sweep_config.hpp"
#include "models/sweep/sweep_report.hpp"

namespace wallsim::cli {

// Creates `dir` when needed; throws InputError when it cannot be written.
void write_report_files(const models::SweepReport& report, const std::string& dir);
void write_row_configs(const models::SweepBase& base, const models::SweepReport& report,
                       const std::string& dir);

// The journal file of a shard inside `dir`.
std::string journal_path(const std::string& dir, const models::ShardSpec& shard);

}  // namespace wallsim::cli
