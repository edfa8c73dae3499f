#include "models/sweep/sweep_html.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <string>

#include "models/sweep/sweep_writers.hpp"

namespace wallsim::models {
namespace {

constexpr double kWidth = 760, kHeight = 400, kLeft = 70, kRight = 20, kTop = 20, kBottom = 50;
constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string num(double value, const char* format = "%.1f") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

struct Axes {
  double x_max = 1, y_max = 1;
  double x(double gib) const { return kLeft + (kWidth - kLeft - kRight) * gib / x_max; }
  double y(double tps) const {
    return kHeight - kBottom - (kHeight - kTop - kBottom) * tps / y_max;
  }
};

void write_axes(const Axes& a, double hbm_gib, std::ostream& out) {
  out << "<line x1='" << kLeft << "' y1='" << kHeight - kBottom << "' x2='" << kWidth - kRight
      << "' y2='" << kHeight - kBottom << "' stroke='#333'/>\n<line x1='" << kLeft << "' y1='"
      << kTop << "' x2='" << kLeft << "' y2='" << kHeight - kBottom << "' stroke='#333'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double gib = a.x_max * i / 4, tps = a.y_max * i / 4;
    out << "<text x='" << num(a.x(gib)) << "' y='" << kHeight - kBottom + 16
        << "' text-anchor='middle'>" << num(gib, "%.0f") << "</text>\n";
    out << "<text x='" << kLeft - 6 << "' y='" << num(a.y(tps) + 4) << "' text-anchor='end'>"
        << num(tps, "%.0f") << "</text>\n";
  }
  out << "<text x='" << (kWidth + kLeft) / 2 << "' y='" << kHeight - 10
      << "' text-anchor='middle'>peak memory per GPU (GiB)</text>\n<text transform='translate(16,"
      << (kHeight - kBottom) / 2 + kTop << ") rotate(-90)' text-anchor='middle'>tokens/s per "
      << "GPU</text>\n<line x1='" << num(a.x(hbm_gib)) << "' y1='" << kTop << "' x2='"
      << num(a.x(hbm_gib)) << "' y2='" << kHeight - kBottom
      << "' stroke='#c33' stroke-dasharray='4 3'/>\n<text x='" << num(a.x(hbm_gib) - 4) << "' y='"
      << kTop + 12 << "' text-anchor='end' fill='#c33'>HBM</text>\n";
}

void write_scatter(const SweepReport& report, std::ostream& out) {
  Axes axes;
  double hbm = 0;
  for (const auto& r : report.rows) {
    axes.x_max = std::max(axes.x_max, r.peak_bytes / kGiB);
    axes.y_max = std::max(axes.y_max, r.tokens_per_s_per_gpu);
    hbm = std::max(hbm, r.hbm_bytes / kGiB);
  }
  axes.x_max = std::max(axes.x_max, hbm) * 1.05;
  axes.y_max *= 1.05;
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kWidth << "' height='" << kHeight
      << "' font-size='11'>\n";
  write_axes(axes, hbm, out);
  for (const auto& r : report.rows) {
    if (r.failed()) continue;
    out << "<circle cx='" << num(axes.x(r.peak_bytes / kGiB)) << "' cy='"
        << num(axes.y(r.tokens_per_s_per_gpu)) << "' r='2.5' fill='#89a'><title>" << r.id << ": "
        << num(r.tokens_per_s_per_gpu) << " tok/s/GPU, " << format_gib(r.peak_bytes)
        << "</title></circle>\n";
  }
  std::string path;
  for (const auto& r : pareto_front(report.rows)) {
    const std::string x = num(axes.x(r.peak_bytes / kGiB)), y = num(axes.y(r.tokens_per_s_per_gpu));
    path += (path.empty() ? "M" : " L") + x + " " + y;
    out << "<circle cx='" << x << "' cy='" << y << "' r='4' fill='#d62'><title>Pareto: " << r.id
        << ": " << num(r.tokens_per_s_per_gpu) << " tok/s/GPU, " << format_gib(r.peak_bytes)
        << "</title></circle>\n";
  }
  out << "<path d='" << path << "' fill='none' stroke='#d62' stroke-width='1.5'/>\n</svg>\n";
}

void write_top(const SweepReport& report, std::ostream& out, std::size_t top) {
  const std::string ranked = report.objective == SweepObjective::step
                                 ? std::string("step (s)")
                                 : to_string(report.objective) + std::string(" of ") +
                                       std::to_string(report.samples) + " steps (s)";
  out << "<table><tr><th>#</th><th>layout</th><th>dp</th><th>" << ranked
      << "</th><th>tokens/s/GPU</th>"
         "<th>MFU</th><th>peak</th><th>binding</th><th>rerun</th><th>Megatron-LM "
         "arguments</th></tr>\n";
  for (std::size_t i = 0; i < report.rows.size() && i < top; ++i) {
    const SweepRow& r = report.rows[i];
    out << "<tr><td>" << i + 1 << "</td><td>" << r.id << "</td><td>" << r.dp << "</td><td>"
        << num(objective_s(r, report.objective), "%.4f")
        << (overlaps_best_band(report, i) ? " <span title='validation band overlaps the best "
                                            "layout&apos;s'>~best</span>"
                                          : "")
        << (r.extrapolated ? " <span title='extrapolated from the steps of pp + 1 and pp + 2 "
                             "micro-batches'>extrapolated</span>"
                           : "")
        << "</td><td>" << num(r.tokens_per_s_per_gpu) << "</td><td>" << num(100 * r.mfu)
        << "%</td><td>" << format_gib(r.peak_bytes) << "</td><td>"
        << escape(r.failed() ? "error: " + r.error : r.binding)
        << "</td><td><code>wallsim run configs/" << r.id << ".json</code></td><td>";
    if (!r.megatron_args.empty()) {
      out << "<details><summary>launch</summary><code>" << escape(r.megatron_args)
          << "</code></details>";
    }
    out << "</td></tr>\n";
  }
  out << "</table>\n";
}

using KnobValue = std::function<std::string(const SweepRow&)>;

// Best tokens/s/GPU for each value of one knob, as horizontal bars.
void write_knob(const std::string& name, const KnobValue& value_of,
                const std::vector<SweepRow>& rows, double best_overall, std::ostream& out) {
  // (numeric order key, value) → (tok/s, id); names sort after numbers, alphabetically.
  std::map<std::pair<long long, std::string>, std::pair<double, std::string>> best;
  for (const auto& r : rows) {
    if (r.failed()) continue;
    const std::string value = value_of(r);
    const bool numeric =
        !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    auto& entry =
        best[{numeric ? std::stoll(value) : std::numeric_limits<long long>::max(), value}];
    if (r.tokens_per_s_per_gpu > entry.first) entry = {r.tokens_per_s_per_gpu, r.id};
  }
  if (best.size() < 2) return;
  out << "<h3>" << name << "</h3><svg xmlns='http://www.w3.org/2000/svg' width='760' height='"
      << 18 * best.size() + 4 << "' font-size='11'>\n";
  double y = 2;
  for (const auto& [key, entry] : best) {
    const double width = 360 * entry.first / best_overall;
    out << "<text x='70' y='" << y + 12 << "' text-anchor='end'>" << escape(key.second)
        << "</text><rect x='76' y='" << y << "' width='" << num(width) << "' height='14' "
        << "fill='#5b8'><title>" << entry.second << "</title></rect><text x='" << num(80 + width)
        << "' y='" << y + 12 << "'>" << num(entry.first) << " (" << entry.second << ")</text>\n";
    y += 18;
  }
  out << "</svg>\n";
}

void write_knobs(const SweepReport& report, std::ostream& out) {
  double best = 1;
  for (const auto& r : report.rows) best = std::max(best, r.tokens_per_s_per_gpu);
  std::vector<std::pair<std::string, KnobValue>> knobs{
      {"tp", [](const SweepRow& r) { return std::to_string(r.point.tp); }},
      {"cp", [](const SweepRow& r) { return std::to_string(r.point.cp); }},
      {"pp", [](const SweepRow& r) { return std::to_string(r.point.pp); }},
      {"vpp", [](const SweepRow& r) { return std::to_string(r.point.vpp); }},
      {"dp", [](const SweepRow& r) { return std::to_string(r.dp); }},
      {"micro_batch", [](const SweepRow& r) { return std::to_string(r.point.micro_batch); }},
      {"recompute", [](const SweepRow& r) { return std::string(to_string(r.point.recompute)); }},
      {"sequence_parallel",
       [](const SweepRow& r) {
         return r.point.sequence_parallel && r.point.tp > 1 ? std::string("on")
                                                            : std::string("off");
       }},
      {"distributed_optimizer",
       [](const SweepRow& r) { return std::string(r.point.distributed_optimizer ? "on" : "off"); }},
      {"overlap", [](const SweepRow& r) { return std::string(r.point.overlap ? "on" : "off"); }},
      {"binding wall", [](const SweepRow& r) { return r.binding; }}};
  const bool experts = std::any_of(report.rows.begin(), report.rows.end(), [](const auto& r) {
    return r.point.ep > 1 || r.point.etp > 1 || r.point.dispatcher != MoeDispatcher::kAllToAll;
  });
  if (experts) {
    knobs.insert(knobs.begin() + 4,
                 {{"ep", [](const SweepRow& r) { return std::to_string(r.point.ep); }},
                  {"etp", [](const SweepRow& r) { return std::to_string(r.point.etp); }},
                  {"dispatcher",
                   [](const SweepRow& r) { return std::string(to_string(r.point.dispatcher)); }}});
  }
  const bool schedules = std::any_of(report.rows.begin(), report.rows.end(),
                                     [](const auto& r) { return !r.point.schedule.empty(); });
  if (schedules) {
    knobs.insert(knobs.begin() + 4,
                 {"schedule", [](const SweepRow& r) { return effective_schedule(r.point); }});
  }
  const bool shardings = std::any_of(report.rows.begin(), report.rows.end(),
                                     [](const auto& r) { return r.point.sharding.has_value(); });
  if (shardings) {
    knobs.push_back({"data sharding", [](const SweepRow& r) {
                       return std::string(to_string(effective_sharding(r.point)));
                     }});
  }
  const bool offloads = std::any_of(report.rows.begin(), report.rows.end(),
                                    [](const auto& r) { return r.point.offload.has_value(); });
  if (offloads) {
    knobs.push_back({"offload", [](const SweepRow& r) {
                       return std::string(r.point.offload ? to_string(*r.point.offload) : "config");
                     }});
  }
  const bool graphs = std::any_of(report.rows.begin(), report.rows.end(),
                                  [](const auto& r) { return r.point.cuda_graphs.has_value(); });
  if (graphs) {
    knobs.push_back({"graphs", [](const SweepRow& r) {
                       return std::string(r.point.cuda_graphs ? to_string(*r.point.cuda_graphs)
                                                              : "config");
                     }});
  }
  const bool placements = std::any_of(report.rows.begin(), report.rows.end(),
                                      [](const auto& r) { return r.point.placement.has_value(); });
  if (placements) {
    knobs.push_back({"placement", [](const SweepRow& r) {
                       return r.point.placement ? std::to_string(*r.point.placement)
                                                : std::string("config");
                     }});
  }
  for (const auto& [name, value_of] : knobs) write_knob(name, value_of, report.rows, best, out);
}

}  // namespace

std::vector<SweepRow> pareto_front(const std::vector<SweepRow>& rows) {
  std::vector<SweepRow> candidates;
  for (const auto& r : rows) {
    if (!r.failed() && r.fits) candidates.push_back(r);
  }
  std::sort(candidates.begin(), candidates.end(), [](const SweepRow& a, const SweepRow& b) {
    if (a.peak_bytes != b.peak_bytes) return a.peak_bytes < b.peak_bytes;
    if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
      return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
    }
    return a.id < b.id;
  });
  std::vector<SweepRow> front;
  for (const auto& r : candidates) {
    if (front.empty() || r.tokens_per_s_per_gpu > front.back().tokens_per_s_per_gpu) {
      front.push_back(r);
    }
  }
  return front;
}

void write_sweep_html(const SweepReport& report, std::ostream& out) {
  const SweepCounts& c = report.counts;
  out << "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>wallsim sweep: "
      << escape(report.model) << "</title>\n<style>body{font-family:sans-serif;margin:24px;"
      << "max-width:1000px}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
      << "padding:3px 8px;font-size:13px}code{font-size:12px}</style></head><body>\n<h1>"
      << escape(report.model) << " on " << report.num_gpus << " GPUs</h1>\n<p>"
      << escape(report.cluster) << ", seq " << report.seq_len << ", global batch "
      << report.global_batch << ", " << escape(report.fidelity) << " fidelity, "
      << escape(report.network) << " network. " << c.points << " points: " << c.pruned_by_layout
      << " pruned by the layout rules, " << c.pruned_by_memory << " by the memory check, "
      << c.pruned_by_recompute << " by recompute (a lighter recompute of the layout fits; "
      << c.recompute_fallbacks << " of them simulated after all), " << c.simulated << " simulated ("
      << c.failed
      << " failed).</p>\n<h2>Throughput against peak memory</h2>\n<p>Every simulated layout; "
      << "the Pareto front (no layout is faster at no more memory) in orange.</p>\n";
  write_scatter(report, out);
  out << "<h2>Fastest layouts</h2>\n<p>Each row's config is in <code>configs/</code> next to "
         "this page; its Megatron-LM arguments launch the same layout.</p>\n";
  write_top(report, out, 15);
  if (report.band) {
    const PredictionInterval& b = *report.band;
    out << "<p>~best: the layout's validation band overlaps the best one's. The band is "
           "wallsim's step-time error on "
        << b.rows << " published runs (" << escape(b.basis) << "), p10 "
        << num(100 * b.error_p10, "%+.1f") << "% to p90 " << num(100 * b.error_p90, "%+.1f")
        << "%: an empirical band, not a confidence interval; errors of one model's layouts are "
           "largely shared, so the ranking inside it is less uncertain than the band.</p>\n";
  }
  out << "<h2>How each knob moves throughput</h2>\n<p>The best tokens/s/GPU among the layouts "
         "with each value (the layout that reaches it in brackets)";
  if (c.pruned_by_recompute > 0) {
    out << "; a heavier recompute is simulated only for layouts that do not fit with a lighter "
           "one (<code>--all-recompute</code> simulates every recompute)";
  }
  out << ".</p>\n";
  write_knobs(report, out);
  out << "<h2>Notes</h2><ul>\n";
  for (const auto& note : report.notes) out << "<li>" << escape(note) << "</li>\n";
  const auto extrapolated = std::count_if(report.rows.begin(), report.rows.end(),
                                          [](const SweepRow& r) { return r.extrapolated; });
  if (extrapolated > 0) {
    out << "<li>" << extrapolated << " of the simulated layouts run the 1F1B schedule with more "
        << "than 2&middot;pp + 3 micro-batches: their steps were extrapolated from the steps of "
        << "pp + 1 and pp + 2 micro-batches, each further micro-batch adding one steady-state "
        << "period (<code>extrapolated</code> in sweep.csv, within a few tenths of a percent "
        << "of the whole step where measured; <code>--all-microbatches</code> simulates every "
        << "step whole)</li>\n";
  }
  for (const auto& [key, count] : c.layout_reasons) {
    out << "<li>pruned by layout rule " << escape(key) << ": " << count << " (e.g. "
        << escape(c.reason_examples.at(key)) << ")</li>\n";
  }
  out << "</ul>\n</body></html>\n";
}

}  // namespace wallsim::models
