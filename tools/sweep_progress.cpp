#include "tools/sweep_progress.hpp"

#include "models/sweep/sweep_runner.hpp"

namespace wallsim::cli {

SweepProgress::SweepProgress(std::FILE* out, bool terminal, double interval_s)
    : out_(out),
      terminal_(terminal),
      interval_s_(interval_s),
      start_(std::chrono::steady_clock::now()) {}

double SweepProgress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void SweepProgress::screened(const models::SweepCounts& c, std::int64_t already_done) {
  resumed_ = already_done;
  std::fprintf(out_,
               "sweep: %lld points: %lld pruned by the layout rules, %lld by the memory check, "
               "%lld by recompute (a lighter one of the layout fits), %lld to simulate",
               static_cast<long long>(c.points), static_cast<long long>(c.pruned_by_layout),
               static_cast<long long>(c.pruned_by_memory),
               static_cast<long long>(c.pruned_by_recompute), static_cast<long long>(c.simulated));
  if (already_done > 0)
    std::fprintf(out_, " (%lld already done)", static_cast<long long>(already_done));
  std::fprintf(out_, "\n");
  std::fflush(out_);
  start_ = std::chrono::steady_clock::now();
  last_print_s_ = 0;  // the first plain line after one interval, when the rate means something
}

std::string SweepProgress::line(std::int64_t done, std::int64_t total, double work_done) const {
  const double t = elapsed_s();
  const double rate = t > 0 ? static_cast<double>(done - resumed_) / t : 0;
  const double eta = done < total ? models::remaining_seconds(t, work_done) : 0;
  char text[256];
  std::snprintf(text, sizeof text,
                "%lld/%lld points, %.1f points/s, ETA %.0f s, best %s (%.0f tok/s/GPU)",
                static_cast<long long>(done), static_cast<long long>(total), rate, eta,
                best_id_.empty() ? "-" : best_id_.c_str(), best_tokens_);
  return text;
}

void SweepProgress::consider(const models::SweepRow& row) {
  if (!row.failed() && row.tokens_per_s_per_gpu > best_tokens_) {
    best_tokens_ = row.tokens_per_s_per_gpu;
    best_id_ = row.id;
  }
}

void SweepProgress::row(const models::SweepRow& row, std::int64_t done, std::int64_t total,
                        double work_done) {
  consider(row);
  const double now = elapsed_s();
  const double interval = terminal_ ? 0.1 : interval_s_;
  if (now - last_print_s_ < interval && done < total) return;
  last_print_s_ = now;
  if (terminal_) {
    const int width = 24;
    const int filled = total > 0 ? static_cast<int>(width * done / total) : width;
    std::fprintf(out_, "\r[%s%s] %s\033[K",
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(),
                 line(done, total, work_done).c_str());
  } else {
    std::fprintf(out_, "sweep: %s\n", line(done, total, work_done).c_str());
  }
  std::fflush(out_);
}

void SweepProgress::finish(std::int64_t simulated) {
  if (terminal_) std::fprintf(out_, "\n");
  const double t = elapsed_s();
  const auto fresh = simulated - resumed_;
  std::fprintf(out_, "sweep: simulated %lld points in %.1f s (%.1f points/s)\n",
               static_cast<long long>(fresh), t, t > 0 ? static_cast<double>(fresh) / t : 0.0);
  std::fflush(out_);
}

}  // namespace wallsim::cli
