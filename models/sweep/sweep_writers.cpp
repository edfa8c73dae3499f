#include "models/sweep/sweep_writers.hpp"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace wallsim::models {
namespace {

std::string number(double value, const char* format = "%.9g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// RFC 4180: quote fields holding a comma, quote or line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

const char* on_off(bool value) {
  return value ? "true" : "false";
}

void write_csv_row(std::ostream& out, std::size_t rank, const SweepRow& r) {
  const SweepPoint& p = r.point;
  out << rank << "," << r.id << "," << p.tp << "," << on_off(p.sequence_parallel && p.tp > 1) << ","
      << p.cp << "," << p.pp << "," << p.vpp << "," << r.dp << "," << p.micro_batch << ","
      << r.num_microbatches << "," << to_string(p.recompute) << ","
      << on_off(p.distributed_optimizer) << "," << on_off(p.overlap) << "," << p.ep << "," << p.etp
      << "," << to_string(p.dispatcher) << "," << effective_schedule(p) << ","
      << to_string(effective_sharding(p)) << "," << number(r.step_time_s) << ","
      << number(r.tokens_per_s_per_gpu) << "," << number(r.mfu) << ","
      << number(r.peak_bytes, "%.0f") << "," << number(r.hbm_bytes, "%.0f") << "," << on_off(r.fits)
      << "," << r.binding << "," << csv_field(r.error) << ",configs/" << r.id << ".json,"
      << on_off(r.extrapolated);
}

// With --samples: the spread of each row's sampled steps (empty cells for a failed row).
void write_csv_distribution(std::ostream& out, const SweepRow& r) {
  if (!r.distribution) {
    out << ",,,,";
    return;
  }
  const Percentiles& d = *r.distribution;
  out << "," << number(d.p10) << "," << number(d.p50) << "," << number(d.p90) << ","
      << number(d.mean);
}

// "rank  layout ... binding" and, with a band, whether it overlaps the best row's.
void write_text_row(const SweepReport& report, std::size_t i, std::ostream& out) {
  const SweepRow& r = report.rows[i];
  char line[256];
  std::snprintf(line, sizeof line, "%4zu  %-34s %10.4f %12.1f %5.1f%% %10s  %s", i + 1,
                (r.id + " dp" + std::to_string(r.dp)).c_str(), objective_s(r, report.objective),
                r.tokens_per_s_per_gpu, 100 * r.mfu, format_gib(r.peak_bytes).c_str(),
                r.failed() ? ("error: " + r.error).c_str() : r.binding.c_str());
  out << line << (overlaps_best_band(report, i) ? "  ~best" : "")
      << (r.extrapolated ? "  extrapolated" : "") << "\n";
}

void write_band_text(const SweepReport& report, std::ostream& out) {
  if (!report.band) return;
  std::size_t overlapping = 0;
  for (std::size_t i = 0; i < report.rows.size(); ++i) overlapping += overlaps_best_band(report, i);
  const PredictionInterval& b = *report.band;
  out << "~best: " << overlapping << " of " << report.rows.size()
      << " layouts have validation bands that overlap the best one's (wallsim's step-time errors "
      << "on " << b.rows << " published runs, " << b.basis << ": p10 "
      << number(100 * b.error_p10, "%+.1f") << "%, p90 " << number(100 * b.error_p90, "%+.1f")
      << "%";
  if (!b.unmatched.empty()) out << "; too few published runs to also match " << b.unmatched;
  out << ")\n";
}

void write_counts(const SweepReport& report, std::ostream& out) {
  const SweepCounts& c = report.counts;
  out << c.points << " points: " << c.pruned_by_layout << " pruned by the layout rules, "
      << c.pruned_by_memory << " by the memory check, " << c.pruned_by_recompute
      << " by recompute (a lighter one of the layout fits), " << c.simulated << " simulated";
  if (c.recompute_fallbacks > 0) {
    out << " (" << c.recompute_fallbacks << " of the recompute-pruned after all: their lighter "
        << "recompute did not fit)";
  }
  if (c.failed > 0) out << " (" << c.failed << " failed)";
  out << "\n";
  const auto extrapolated = std::count_if(report.rows.begin(), report.rows.end(),
                                          [](const SweepRow& r) { return r.extrapolated; });
  if (extrapolated > 0) {
    out << "  " << extrapolated << " of them extrapolated: 1F1B steps of more than 2·pp + 3 "
        << "micro-batches, from the steps of pp + 1 and pp + 2 (--all-microbatches simulates every "
        << "step whole)\n";
  }
  for (const auto& [key, count] : c.layout_reasons) {
    out << "  layout: " << count << " x " << key << "  e.g. " << c.reason_examples.at(key) << "\n";
  }
}

}  // namespace

std::string format_gib(double bytes) {
  return number(bytes / (1024.0 * 1024 * 1024), "%.1f") + " GiB";
}

void write_sweep_csv(const SweepReport& report, std::ostream& out) {
  // An offload column when the sweep states it (--vary offload): "config" where a row runs the
  // base config's own training.offload.
  const bool offloads = std::any_of(report.rows.begin(), report.rows.end(),
                                    [](const SweepRow& r) { return r.point.offload.has_value(); });
  const bool graphs = std::any_of(report.rows.begin(), report.rows.end(), [](const SweepRow& r) {
    return r.point.cuda_graphs.has_value();
  });
  const bool placements =
      std::any_of(report.rows.begin(), report.rows.end(),
                  [](const SweepRow& r) { return r.point.placement.has_value(); });
  out << "rank,id,tp,sp,cp,pp,vpp,dp,micro_batch,num_microbatches,recompute,"
         "distributed_optimizer,overlap,ep,etp,dispatcher,schedule,data_sharding,step_time_s,"
         "tokens_per_s_per_"
         "gpu,mfu,"
         "peak_bytes,"
         "hbm_bytes,fits_in_memory,binding,error,config,extrapolated"
      << (offloads ? ",offload" : "") << (graphs ? ",graphs" : "")
      << (placements ? ",placement" : "") << (report.samples > 1 ? ",p10_s,p50_s,p90_s,mean_s" : "")
      << "\n";
  for (std::size_t i = 0; i < report.rows.size(); ++i) {
    write_csv_row(out, i + 1, report.rows[i]);
    if (offloads) {
      const auto& offload = report.rows[i].point.offload;
      out << "," << (offload ? to_string(*offload) : "config");
    }
    if (graphs) {
      const auto& scope = report.rows[i].point.cuda_graphs;
      out << "," << (scope ? to_string(*scope) : "config");
    }
    if (placements) {
      const auto& gpus = report.rows[i].point.placement;
      out << "," << (gpus ? std::to_string(*gpus) : "config");
    }
    if (report.samples > 1) write_csv_distribution(out, report.rows[i]);
    out << "\n";
  }
}

void write_sweep_json(const SweepReport& report, std::ostream& out) {
  out << report_to_json(report).dump(2) << "\n";
}

void write_sweep_text(const SweepReport& report, std::ostream& out, std::size_t top) {
  out << report.model << " on " << report.num_gpus << " GPUs (" << report.cluster << ", seq "
      << report.seq_len << ", global batch " << report.global_batch << ", " << report.fidelity
      << " fidelity, " << report.network << " network)\n";
  write_counts(report, out);
  if (report.samples > 1) {
    out << "ranked by " << to_string(report.objective) << " of " << report.samples
        << " sampled steps per layout\n";
  }
  const std::string ranked = report.objective == SweepObjective::step
                                 ? "step s"
                                 : to_string(report.objective) + std::string(" s");
  char line[256];
  std::snprintf(line, sizeof line, "%4s  %-34s %10s %12s %6s %10s  %s\n", "rank", "layout",
                ranked.c_str(), "tok/s/GPU", "MFU", "peak", "binding");
  out << line;
  for (std::size_t i = 0; i < report.rows.size() && i < top; ++i) write_text_row(report, i, out);
  write_band_text(report, out);
  for (const auto& note : report.notes) out << "note: " << note << "\n";
}

}  // namespace wallsim::models
