// Progress of a sweep on stderr: on a terminal one line redrawn in place (done/total, rate, ETA,
// best so far; the ETA from the share of the estimated work done, not of the points); otherwise a
// plain line every `interval_s` seconds and one at the end, so logs of batch jobs stay readable.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "models/sweep/sweep_report.hpp"

namespace wallsim::cli {

class SweepProgress {
 public:
  SweepProgress(std::FILE* out, bool terminal, double interval_s = 10.0);

  void screened(const models::SweepCounts& counts, std::int64_t already_done);
  void row(const models::SweepRow& row, std::int64_t done, std::int64_t total, double work_done);
  // A row of an earlier run (--resume): counts for "best so far" only.
  void consider(const models::SweepRow& row);
  void finish(std::int64_t simulated);

 private:
  std::string line(std::int64_t done, std::int64_t total, double work_done) const;
  double elapsed_s() const;

  std::FILE* out_;
  bool terminal_;
  double interval_s_;
  std::chrono::steady_clock::time_point start_;
  double last_print_s_ = -1e9;
  std::int64_t resumed_ = 0;
  double best_tokens_ = 0;
  std::string best_id_;
};

}  // namespace wallsim::cli
