#include "sim/report/summary_writers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace wallsim {
namespace {

using nlohmann::json;

json stage_json(const StageMemorySummary& stage) {
  json out = {{"stage", stage.stage},
              {"weights", stage.weights},
              {"grads", stage.grads},
              {"optimizer", stage.optimizer},
              {"activations", stage.activations},
              {"buffers", stage.buffers},
              {"unit_buffers", stage.unit_buffers},
              {"wgrad_placeholders", stage.wgrad_placeholders},
              {"grad_transients", stage.grad_transients},
              {"allocated", stage.allocated},
              {"reserved", stage.reserved},
              {"peak", stage.peak},
              {"simulated_peak", stage.simulated_peak},
              {"simulated_activations", stage.simulated_activations}};
  if (stage.host_optimizer > 0) out["host_optimizer"] = stage.host_optimizer;
  if (stage.cuda_graphs > 0) out["cuda_graphs"] = stage.cuda_graphs;
  return out;
}

// PyTorch's two peaks and the fit margin (models/memory.hpp), beside peak_bytes.
void add_allocator_peaks(const RunSummary& s, json& memory) {
  memory["peak_allocated_bytes"] = s.peak_allocated_bytes;
  memory["peak_reserved_bytes"] = s.peak_reserved_bytes;
  memory["fit_margin"] = s.fit_margin;
}

json time_json(const TimeSplit& time) {
  json exposed = json::object();
  json by_kind = json::object();
  json ideal_by_kind = json::object();
  for (const OpCategoryInfo& info : kOpCategories) {
    const auto slot = static_cast<std::size_t>(info.slot);
    if (info.communication) {
      exposed[info.name] = time.exposed_comm_s[slot];
    } else {
      by_kind[info.name] = time.compute_by_kind_s[slot];
      ideal_by_kind[info.name] = time.ideal_by_kind_s[slot];
    }
  }
  return {{"step_s", time.step_s},
          {"compute_by_kind_s", by_kind},
          {"ideal_by_kind_s", ideal_by_kind},
          {"ideal_s", time.ideal_s},
          {"compute_s", time.compute_s},
          {"compute_inefficiency_s", time.compute_inefficiency_s},
          {"exposed_comm_s", exposed},
          {"exposed_comm_total_s", time.exposed_comm_total()},
          {"bubble_s", time.bubble_s},
          {"host_s", time.host_s},
          {"other_s", time.other_s}};
}

json compute_json(const RunSummary& s) {
  json peaks = json::object();
  for (const OpCategoryInfo& info : kOpCategories) {
    if (!info.communication) {
      peaks[info.name] = s.kernel_rates.peak_flops[static_cast<std::size_t>(info.slot)];
    }
  }
  json families = json::array();
  for (const KernelFamily& f : s.kernel_families) {
    families.push_back({{"family", f.family},
                        {"kind", f.kind},
                        {"ops", f.ops},
                        {"time_s", f.time_s},
                        {"share", f.share},
                        {"host_wait_s", f.host_wait_s},
                        {"flops", f.flops},
                        {"tflops_per_s", f.tflops_per_s},
                        {"peak_fraction", f.peak_fraction},
                        {"bytes", f.bytes},
                        {"GBps", f.GBps},
                        {"hbm_fraction", f.hbm_fraction}});
  }
  return {{"peak_flops_by_kind", peaks},
          {"hbm_bandwidth_Bps", s.kernel_rates.hbm_bandwidth_Bps},
          {"kernel_families", families}};
}

json walls_json(const Walls& walls) {
  return {
      {"compute", {{"share", walls.compute.share}, {"contributor", walls.compute.contributor}}},
      {"communication",
       {{"share", walls.communication.share}, {"contributor", walls.communication.contributor}}},
      {"memory", {{"utilization", walls.memory.share}, {"contributor", walls.memory.contributor}}},
      {"binding", walls.binding},
      {"binding_margin", walls.binding_margin}};
}

json communication_json(const RunSummary& s) {
  json groups = json::array();
  json by_tier = {{"nvlink", 0.0}, {"network", 0.0}};
  for (const auto& g : s.exposure_by_group) {
    groups.push_back({{"group", g.group}, {"exposed_s", g.exposed_s}, {"tier", g.tier}});
    by_tier[g.tier] = by_tier.value(g.tier, 0.0) + g.exposed_s;
  }
  json tiers = json::array();
  for (const auto& t : s.link_tiers) {
    tiers.push_back({{"tier", t.tier},
                     {"links", t.links},
                     {"bytes", t.bytes},
                     {"max_utilization", t.max_utilization},
                     {"mean_utilization", t.mean_utilization}});
  }
  json links = json::array();
  for (const auto& l : s.busiest_links) {
    links.push_back({{"name", l.name},
                     {"tier", l.tier},
                     {"bytes", l.bytes},
                     {"busy_s", l.busy_s},
                     {"utilization", l.utilization}});
  }
  return {{"exposed_by_group", groups},
          {"exposed_by_tier_s", by_tier},
          {"link_tiers", tiers},
          {"busiest_links", links}};
}

json what_if_json(const RunSummary& s) {
  json sensitivities = json::array();
  for (const auto& x : s.sensitivities) {
    json entry = {{"parameter", x.parameter},
                  {"factor", x.factor},
                  {"step_s", x.step_s},
                  {"change", x.change}};
    if (!x.setting.empty()) entry["setting"] = x.setting;
    sensitivities.push_back(std::move(entry));
  }
  json fits = json::array();
  for (const auto& f : s.fit_suggestions) {
    json entry = {{"change", f.change},         {"overrides", f.overrides}, {"valid", f.valid},
                  {"peak_bytes", f.peak_bytes}, {"fits", f.fits},           {"note", f.note}};
    if (f.timed) {
      entry["step_s"] = f.step_s;
      entry["step_change"] = f.step_change;
    }
    fits.push_back(std::move(entry));
  }
  return {{"sensitivities", sensitivities}, {"fit_suggestions", fits}};
}

json percentiles_json(const Percentiles& p) {
  return {{"p10_s", p.p10}, {"p50_s", p.p50}, {"p90_s", p.p90}, {"mean_s", p.mean}};
}

// summary.json's `distribution`: step time percentiles at the top level, every sample's step
// time, the same percentiles for each exposed communication group and the bubble, and the share
// of samples each wall bound.
json distribution_json(const StepDistribution& d) {
  json document = percentiles_json(d.step);
  document["samples"] = d.samples;
  document["median_sample"] = d.median_sample;
  json exposed = json::object();
  for (const OpCategoryInfo& info : kOpCategories) {
    if (info.communication) {
      exposed[info.name] = percentiles_json(d.exposed_comm[static_cast<std::size_t>(info.slot)]);
    }
  }
  document["exposed_comm_s"] = exposed;
  document["bubble_s"] = percentiles_json(d.bubble);
  document["steps_s"] = d.step_s;
  json critical = json::array();
  for (const auto& [rank, share] : d.critical_ranks) {
    critical.push_back({{"rank", rank}, {"share", share}});
  }
  document["critical_ranks"] = critical;
  document["binding_share"] = {{"compute", d.compute_binding},
                               {"communication", d.communication_binding},
                               {"memory", d.memory_binding}};
  return document;
}

// Where the stragglers' cost lands: each part of the step split, with them less without them
// (each on its own critical rank), parts that moved by less than 0.1% of the cost (and 1 us)
// left out.
std::vector<std::pair<std::string, double>> straggler_cost_parts(const RunSummary& s) {
  std::vector<std::pair<std::string, double>> parts;
  if (!s.straggler_free_time) return parts;
  const TimeSplit& with = s.time;
  const TimeSplit& without = *s.straggler_free_time;
  parts.emplace_back("compute", with.compute_s - without.compute_s);
  for (const OpCategoryInfo& info : kOpCategories) {
    if (!info.communication) continue;
    const auto slot = static_cast<std::size_t>(info.slot);
    parts.emplace_back(std::string("exposed ") + info.name,
                       with.exposed_comm_s[slot] - without.exposed_comm_s[slot]);
  }
  parts.emplace_back("bubble", with.bubble_s - without.bubble_s);
  parts.emplace_back("host", with.host_s - without.host_s);
  parts.emplace_back("other", with.other_s - without.other_s);
  const double negligible = std::max(1e-6, 1e-3 * std::abs(*s.straggler_cost_s));
  std::erase_if(parts,
                [negligible](const auto& part) { return std::abs(part.second) < negligible; });
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return parts;
}

json straggler_cost_json(const RunSummary& s) {
  json parts = json::array();
  for (const auto& [part, seconds] : straggler_cost_parts(s)) {
    parts.push_back({{"part", part}, {"s", seconds}});
  }
  return {{"cost_s", *s.straggler_cost_s}, {"by_part", parts}};
}

json prediction_interval_json(const PredictionInterval& b) {
  return {{"low_s", b.low_s},         {"high_s", b.high_s},       {"error_p10", b.error_p10},
          {"error_p50", b.error_p50}, {"error_p90", b.error_p90}, {"rows", b.rows},
          {"basis", b.basis},         {"unmatched", b.unmatched}, {"kind", "empirical"}};
}

// "  validation band     3.612 - 4.051 s (p10-p90 of the errors on 62 published runs: ...)"
void write_prediction_interval_text(const PredictionInterval& b, std::ostream& out);

std::string gib(double bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  return buffer;
}

std::string line(const char* format, double a, double b = 0) {
  char buffer[160];
  std::snprintf(buffer, sizeof buffer, format, a, b);
  return buffer;
}

// Families the console lists under the compute line; summary.json has them all.
constexpr std::size_t kConsoleKernelFamilies = 5;

// "fc1 fwd   1.234 s   16.2%  host  0.010 s     612.0 TFLOP/s   62% of peak"
std::string family_line(const KernelFamily& f) {
  char buffer[200];
  std::snprintf(buffer, sizeof buffer, "        %-30s %7.3f s %6.1f%%  host %6.3f s",
                f.family.c_str(), f.time_s, 100 * f.share, f.host_wait_s);
  std::string text = buffer;
  if (f.flops > 0) {
    text += line("  %8.1f TFLOP/s %4.0f%% of peak", f.tflops_per_s, 100 * f.peak_fraction);
  } else if (f.bytes > 0) {
    text += line("  %8.0f GB/s    %4.0f%% of HBM", f.GBps, 100 * f.hbm_fraction);
  }
  return text + "\n";
}

void write_kernel_families_text(const RunSummary& s, std::ostream& out) {
  if (s.kernel_families.empty()) return;
  const std::size_t shown = std::min(kConsoleKernelFamilies, s.kernel_families.size());
  out << "      kernel families, top " << shown << " of " << s.kernel_families.size()
      << " (time, share of compute, host wait before issue, achieved):\n";
  for (std::size_t i = 0; i < shown; ++i) out << family_line(s.kernel_families[i]);
}

void write_what_if_text(const RunSummary& s, std::ostream& out) {
  if (!s.sensitivities.empty()) out << "  sensitivities (re-simulated step time):\n";
  for (const auto& x : s.sensitivities) {
    if (x.setting.empty()) {
      out << "    " << x.parameter << line(" x%.2f: %+.2f%%\n", x.factor, 100 * x.change);
    } else {
      out << "    " << x.parameter << " = " << x.setting
          << line(": %+.2f%%\n", 100 * x.change, 0.0);
    }
  }
  if (!s.fit_suggestions.empty()) out << "  what would make it fit (analytical peak):\n";
  for (const auto& f : s.fit_suggestions) {
    out << "    " << f.change << ": "
        << (f.valid ? gib(f.peak_bytes) + (f.fits ? "  fits" : "  does not fit")
                    : "not a valid layout (" + f.note + ")");
    if (f.timed) out << line(", step %.3f s (%+.1f%%)", f.step_s, 100 * f.step_change);
    out << "\n";
  }
}

void write_prediction_interval_text(const PredictionInterval& b, std::ostream& out) {
  out << line("  validation band    %10.3f - %.3f s", b.low_s, b.high_s)
      << " (p10-p90 of the errors on " << b.rows << " published runs: " << b.basis;
  if (!b.unmatched.empty()) out << "; too few published runs to also match " << b.unmatched;
  out << ")\n";
}

}  // namespace

void write_summary_json(const RunSummary& s, std::ostream& out) {
  json per_stage = json::array();
  for (const auto& stage : s.per_stage) per_stage.push_back(stage_json(stage));
  json document = {
      {"model", s.model_name},
      {"cluster", s.cluster_name},
      {"num_gpus", s.num_gpus},
      {"layout", s.layout},
      {"simulation",
       {{"fidelity", s.fidelity},
        {"network", s.network_model},
        {"attention_backend", s.attention_backend},
        {"cuda_graphs", s.cuda_graphs},
        {"simulated_ranks", s.simulated_ranks},
        {"critical_rank", s.critical_rank},
        {"critical_stage", s.critical_stage}}},
      {"iteration_time_s", s.iteration_time_s},
      {"tokens_per_iteration", s.tokens_per_iteration},
      {"tokens_per_s_per_gpu", s.tokens_per_s_per_gpu},
      {"model_tflops_per_gpu", s.model_tflops_per_gpu},
      {"mfu", s.mfu},
      {"peak_flops_per_gpu", s.peak_flops_per_gpu},
      {"flops",
       {{"model_per_iteration", s.model_flops_per_iteration},
        {"hardware_per_iteration", s.hardware_flops_per_iteration}}},
      {"memory",
       {{"peak_bytes", s.peak_bytes}, {"hbm_bytes", s.hbm_bytes}, {"per_stage", per_stage}}},
      {"fits_in_memory", s.fits_in_memory},
      {"time", time_json(s.time)},
      {"walls", walls_json(s.walls)},
      {"compute", compute_json(s)},
      {"communication", communication_json(s)},
      {"notes", s.notes}};
  add_allocator_peaks(s, document["memory"]);
  document.update(what_if_json(s));
  if (s.distribution) document["distribution"] = distribution_json(*s.distribution);
  if (s.straggler_cost_s) {
    document["straggler_cost_s"] = *s.straggler_cost_s;
    document["stragglers"] = straggler_cost_json(s);
  }
  if (s.prediction_interval) {
    document["prediction_interval"] = prediction_interval_json(*s.prediction_interval);
  }
  out << document.dump(2) << "\n";
}

void write_summary_text(const RunSummary& s, std::ostream& out) {
  out << s.model_name << " on " << s.num_gpus << " GPUs (" << s.cluster_name << "), " << s.layout
      << "\n";
  out << line("  step time          %10.3f s\n", s.iteration_time_s);
  if (s.prediction_interval) write_prediction_interval_text(*s.prediction_interval, out);
  if (s.straggler_cost_s) {
    const double without = s.iteration_time_s - *s.straggler_cost_s;
    out << line(
        "  stragglers cost   %+10.3f s per step (%+.1f%% over the same step without them)\n",
        *s.straggler_cost_s, without > 0 ? 100 * *s.straggler_cost_s / without : 0.0);
    const auto parts = straggler_cost_parts(s);
    if (!parts.empty()) out << "    where it lands on the critical rank:";
    for (std::size_t i = 0; i < parts.size() && i < 4; ++i) {
      out << (i ? "," : "") << " " << parts[i].first << line(" %+.3f s", parts[i].second);
    }
    if (!parts.empty()) out << "\n";
  }
  if (const auto& d = s.distribution) {
    out << "  over " << d->samples
        << " sampled steps:" << line(" p10 %.3f s, p50 %.3f s", d->step.p10, d->step.p50)
        << line(", p90 %.3f s, mean %.3f s", d->step.p90, d->step.mean) << " (this is sample "
        << d->median_sample << ", the median)\n";
    out << "    binding wall in"
        << line(" %.0f%% compute, %.0f%% communication", 100 * d->compute_binding,
                100 * d->communication_binding)
        << line(", %.0f%% memory of the samples\n", 100 * d->memory_binding);
    out << "    ended the step last:";
    for (const auto& [rank, share] : d->critical_ranks) {
      out << " rank " << rank << line(" (%.0f%%)", 100 * share);
    }
    out << "\n";
  }
  out << line("  tokens/s per GPU   %10.1f\n", s.tokens_per_s_per_gpu);
  out << line("  model TFLOP/s/GPU  %10.1f   MFU %.1f%%\n", s.model_tflops_per_gpu, 100 * s.mfu);
  out << "  memory per stage (analytical peak / simulated peak, of " << gib(s.hbm_bytes) << " HBM, "
      << line("%.0f%%", 100 * s.fit_margin) << " kept free):\n";
  const double usable = (1 - s.fit_margin) * s.hbm_bytes;
  for (const auto& stage : s.per_stage) {
    out << "    stage " << stage.stage << ": " << gib(stage.peak) << " / "
        << gib(stage.simulated_peak) << " (allocated " << gib(stage.allocated) << ", reserved "
        << gib(stage.reserved) << ")" << (stage.peak > usable ? "  DOES NOT FIT" : "") << "\n";
  }
  const TimeSplit& t = s.time;
  const double step = t.step_s > 0 ? t.step_s : 1;
  out << "  time on the critical rank (global rank " << s.critical_rank << ", stage "
      << s.critical_stage << "):\n";
  out << line("    ideal compute          %9.3f s  %5.1f%%\n", t.ideal_s, 100 * t.ideal_s / step);
  out << line("    compute inefficiency   %9.3f s  %5.1f%%\n", t.compute_inefficiency_s,
              100 * t.compute_inefficiency_s / step);
  out << line("      (compute: gemm %.3f s, attention %.3f s", t.compute_by_kind_s[0],
              t.compute_by_kind_s[1])
      << line(", elementwise %.3f s, optimizer %.3f s)\n", t.compute_by_kind_s[2],
              t.compute_by_kind_s[3]);
  write_kernel_families_text(s, out);
  for (int g = 0; g < kCommGroupCount; ++g) {
    if (t.exposed_comm_s[g] <= 0) continue;
    out << "    exposed " << category_name(category_at_slot(true, g))
        << line(" comm        %9.3f s  %5.1f%%\n", t.exposed_comm_s[g],
                100 * t.exposed_comm_s[g] / step);
  }
  out << line("    pipeline bubble        %9.3f s  %5.1f%%\n", t.bubble_s, 100 * t.bubble_s / step);
  out << line("    host (not issued yet)  %9.3f s  %5.1f%%\n", t.host_s, 100 * t.host_s / step);
  out << line("    other                  %9.3f s  %5.1f%%\n", t.other_s, 100 * t.other_s / step);
  const Walls& w = s.walls;
  out << "  binding wall: " << w.binding << "  (compute "
      << line("%.0f%%, communication %.0f%%", 100 * w.compute.share, 100 * w.communication.share)
      << line(", memory %.0f%% of HBM)\n", 100 * w.memory.share);
  const Wall& binding = w.binding == "memory"          ? w.memory
                        : w.binding == "communication" ? w.communication
                                                       : w.compute;
  out << "  largest contributor: " << binding.contributor << "\n";
  write_what_if_text(s, out);
  for (const auto& note : s.notes) out << "  note: " << note << "\n";
}

}  // namespace wallsim
