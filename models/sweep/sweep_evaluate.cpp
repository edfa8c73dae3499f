#include "models/sweep/sweep_evaluate.hpp"

#include <algorithm>
#include <exception>
#include <map>

#include "models/flops.hpp"
#include "models/launch_args/megatron_export.hpp"
#include "models/memory.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/run/simulate.hpp"
#include "models/run/summarize.hpp"
#include "models/step/step_program.hpp"
#include "sim/core/input_error.hpp"
#include "sim/report/op_category.hpp"
#include "sim/report/time_attribution.hpp"
#include "sim/report/walls.hpp"

namespace wallsim::models {
namespace {

// "file: parallel.tp = 3: must divide ..." → "parallel.tp".
std::string reason_key(const std::string& message, const std::string& file) {
  std::string rest = message;
  if (rest.rfind(file + ": ", 0) == 0) rest = rest.substr(file.size() + 2);
  const auto end = std::min(rest.find(" = "), rest.find(": "));
  return rest.substr(0, end);
}

std::optional<std::string> sweep_rule_violation(const SweepBase& base, const SweepSpace& space,
                                                const SweepPoint& p) {
  const std::int64_t layers = base.parsed.model.layers;
  if (p.vpp > 1 && layers % (p.pp * p.vpp) != 0) {
    return base.file + ": parallel.vpp = " + std::to_string(p.vpp) +
           ": several model chunks per stage need layers (" + std::to_string(layers) +
           ") to divide by pp·vpp = " + std::to_string(p.pp * p.vpp);
  }
  const bool sp_on_in_space =
      std::find(space.sequence_parallel.begin(), space.sequence_parallel.end(), true) !=
      space.sequence_parallel.end();
  if (p.tp == 1 && !p.sequence_parallel && sp_on_in_space) {
    return base.file +
           ": parallel.sequence_parallel = false: with tp = 1 the same layout as with it on";
  }
  return std::nullopt;
}

}  // namespace

ScreenedPoint screen_point(const SweepBase& base, const SweepSpace& space, std::int64_t index,
                           double hbm_bytes, int compute_capability) {
  ScreenedPoint s;
  s.index = index;
  s.point = space.at(index);
  if (auto violation = sweep_rule_violation(base, space, s.point)) {
    s.reason = *violation;
    s.reason_key = reason_key(s.reason, base.file);
    return s;
  }
  try {
    s.config = point_run_config(base, s.point);
  } catch (const InputError& e) {
    s.reason = e.what();
    s.reason_key = reason_key(s.reason, base.file);
    return s;
  }
  const MemoryReport memory = memory_report(s.config->model, s.config->layout, s.config->training,
                                            hbm_bytes, compute_capability);
  s.peak_bytes = memory.peak_bytes;
  if (!memory.fits_in_memory) {
    s.stage = PointStage::pruned_by_memory;
    s.reason_key = "memory";
    s.reason = "analytical peak exceeds HBM less its fit margin";
    s.config.reset();
    return s;
  }
  s.stage = PointStage::to_simulate;
  return s;
}

namespace {

// Positions in space.recompute of the recomputes heavier (or, with lighter, lighter) than
// `recompute`, lightest first.
std::vector<std::size_t> recompute_positions(const SweepSpace& space, Recompute recompute,
                                             bool lighter) {
  std::vector<std::size_t> positions;
  for (std::size_t k = 0; k < space.recompute.size(); ++k) {
    const Recompute other = space.recompute[k];
    if (lighter ? other < recompute : other > recompute) positions.push_back(k);
  }
  std::sort(positions.begin(), positions.end(),
            [&](std::size_t a, std::size_t b) { return space.recompute[a] < space.recompute[b]; });
  return positions;
}

}  // namespace

void prune_dominated_recompute(const SweepBase& base, const SweepSpace& space,
                               std::vector<ScreenedPoint>& screened, double hbm_bytes,
                               int compute_capability) {
  std::map<std::int64_t, PointStage> stages;  // before this pruning
  for (const auto& s : screened) stages.emplace(s.index, s.stage);
  auto stage_of = [&](std::int64_t index) {
    auto it = stages.find(index);
    if (it == stages.end()) {
      it =
          stages
              .emplace(index, screen_point(base, space, index, hbm_bytes, compute_capability).stage)
              .first;
    }
    return it->second;
  };
  for (auto& s : screened) {
    if (s.stage != PointStage::to_simulate) continue;
    for (std::size_t k : recompute_positions(space, s.point.recompute, true)) {
      if (stage_of(space.with_recompute(s.index, k)) != PointStage::to_simulate) continue;
      s.stage = PointStage::pruned_by_recompute;
      s.reason_key = "recompute";
      s.reason = std::string("recompute ") + to_string(space.recompute[k]) +
                 " of the same layout fits, and recomputing more only adds work";
      s.config.reset();
      break;
    }
  }
}

std::optional<ScreenedPoint> recompute_fallback(const SweepBase& base, const SweepSpace& space,
                                                const SweepRow& row, double hbm_bytes,
                                                int compute_capability) {
  if (!row.failed() && row.fits) return std::nullopt;
  for (std::size_t k : recompute_positions(space, row.point.recompute, false)) {
    ScreenedPoint s = screen_point(base, space, space.with_recompute(row.index, k), hbm_bytes,
                                   compute_capability);
    if (s.stage == PointStage::to_simulate) return s;
  }
  return std::nullopt;
}

std::optional<SteadyStateMicrobatches> steady_state_microbatches(const RunConfig& config,
                                                                 int samples) {
  const Layout& layout = config.layout;
  const std::int64_t pp = layout.sizes.pp;
  if (samples > 1 || config.variability.active() || pp < 2 || layout.schedule == nullptr ||
      layout.schedule->name != "1f1b" || layout.num_microbatches <= 2 * pp + 3) {
    return std::nullopt;
  }
  return SteadyStateMicrobatches{pp + 1, pp + 2};
}

namespace {

// `config` with `microbatches` micro-batches per step (the global batch scaled to match).
RunConfig with_microbatches(const RunConfig& config, std::int64_t microbatches) {
  const std::int64_t per_microbatch =
      config.training.global_batch / config.layout.num_microbatches;  // micro_batch·dp
  return variant_of(config,
                    {"training.global_batch=" + std::to_string(microbatches * per_microbatch)});
}

// b + k·(b − a), field by field.
TimeSplit extend(const TimeSplit& a, const TimeSplit& b, double k) {
  auto line = [k](double x, double y) { return y + k * (y - x); };
  TimeSplit t;
  t.step_s = line(a.step_s, b.step_s);
  t.ideal_s = line(a.ideal_s, b.ideal_s);
  t.compute_s = line(a.compute_s, b.compute_s);
  t.compute_inefficiency_s = line(a.compute_inefficiency_s, b.compute_inefficiency_s);
  for (int g = 0; g < kCommGroupCount; ++g) {
    t.exposed_comm_s[g] = line(a.exposed_comm_s[g], b.exposed_comm_s[g]);
  }
  t.bubble_s = line(a.bubble_s, b.bubble_s);
  t.host_s = line(a.host_s, b.host_s);
  t.other_s = line(a.other_s, b.other_s);
  for (int kind = 0; kind < kComputeKindCount; ++kind) {
    t.compute_by_kind_s[kind] = line(a.compute_by_kind_s[kind], b.compute_by_kind_s[kind]);
    t.ideal_by_kind_s[kind] = line(a.ideal_by_kind_s[kind], b.ideal_by_kind_s[kind]);
  }
  return t;
}

// A short step's summary, and per simulated rank the time its compute stream ran kernels, waited
// for its host or waited on communication within its stage (not on the pipeline's sends and
// receives, not on other stages): its own pace, whatever the other stages do.
struct ShortStep {
  RunSummary summary;
  std::vector<double> own_s;
};

ShortStep simulate_short(const RunConfig& config, std::int64_t microbatches, const GpuProfile& gpu,
                         const CommProfile& comm) {
  const SimulationResult result = simulate(with_microbatches(config, microbatches), gpu, comm);
  ShortStep step{result.summary, {}};
  const int pp_slot = category_slot(OpCategory::kPp);
  for (std::size_t r = 0; r < result.replay.ranks.size(); ++r) {
    const TimeSplit split = attribute_time(result.program.graphs[r], result.replay.ranks[r],
                                           Streams::kCompute, result.replay.end, 0);
    double own = split.compute_s + split.host_s;
    for (int g = 0; g < kCommGroupCount; ++g) {
      if (g != pp_slot) own += split.exposed_comm_s[g];
    }
    step.own_s.push_back(own);
  }
  return step;
}

// The whole step's summary from the two short steps', where they agree on what does not depend
// on the micro-batch count (the rank that ends last, the memory) and the pipeline already runs
// at its slowest stage's pace; else nothing.
std::optional<RunSummary> extrapolate(const RunConfig& config, const SteadyStateMicrobatches& m,
                                      const ShortStep& first, const ShortStep& second) {
  const RunSummary& a = first.summary;
  const RunSummary& b = second.summary;
  if (a.critical_rank != b.critical_rank || a.peak_bytes != b.peak_bytes ||
      a.fits_in_memory != b.fits_in_memory || b.per_stage.empty() ||
      first.own_s.size() != second.own_s.size()) {
    return std::nullopt;
  }
  // Each further micro-batch costs every rank its own time again, so in the steady state the
  // step grows by at least the largest rank's increase. Growing by less, the slowest stage still
  // has idle gaps at pp + 2 micro-batches that absorb the extra work (uneven stages, e.g. of
  // one and two layers) and the pace rises later on: not extrapolated.
  const double period =
      (b.iteration_time_s - a.iteration_time_s) / static_cast<double>(m.second - m.first);
  for (std::size_t r = 0; r < first.own_s.size(); ++r) {
    const double own = (second.own_s[r] - first.own_s[r]) / static_cast<double>(m.second - m.first);
    if (period < own * (1 - 1e-6)) return std::nullopt;
  }
  const double k = static_cast<double>(config.layout.num_microbatches - m.second) /
                   static_cast<double>(m.second - m.first);
  RunSummary s = b;
  s.time = extend(a.time, b.time, k);
  s.iteration_time_s = s.time.step_s;
  set_throughput(
      s, iteration_flops(config.model, config.training, config.layout.sizes.tp, config.num_gpus));
  ComputeExcess excess;
  for (int kind = 0; kind < kComputeKindCount; ++kind) {
    excess.seconds[kind] = s.time.compute_by_kind_s[kind] - s.time.ideal_by_kind_s[kind];
  }
  s.walls = summary_walls(s, excess);
  return s;
}

// The step's summary: simulated whole, or extrapolated from two short steps.
RunSummary point_summary(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                         int samples, bool all_microbatches, bool& extrapolated) {
  extrapolated = false;
  if (samples > 1) return simulate_samples(config, gpu, comm, samples, 1, {}).summary;
  if (!all_microbatches) {
    if (const auto m = steady_state_microbatches(config, samples)) {
      std::optional<RunSummary> whole;
      try {
        // One after the other, so the first step's graphs are freed before the second's are
        // built.
        const ShortStep a = simulate_short(config, m->first, gpu, comm);
        const ShortStep b = simulate_short(config, m->second, gpu, comm);
        whole = extrapolate(config, *m, a, b);
      } catch (const std::exception&) {
        // A short step the simulator refuses or cannot finish: the whole step decides.
      }
      if (whole) {
        extrapolated = true;
        return *whole;
      }
    }
  }
  return simulate(config, gpu, comm).summary;
}

}  // namespace

SweepRow simulate_point(const ScreenedPoint& s, const GpuProfile& gpu, const CommProfile& comm,
                        double hbm_bytes, int samples, bool all_microbatches) {
  SweepRow row;
  row.index = s.index;
  row.id = point_id(s.point);
  row.point = s.point;
  row.point.sequence_parallel = s.point.sequence_parallel || s.point.tp == 1;
  row.dp = s.config->layout.sizes.dp;
  row.num_microbatches = s.config->layout.num_microbatches;
  row.peak_bytes = s.peak_bytes;
  row.hbm_bytes = hbm_bytes;
  row.fits = true;
  // Launch arguments only where Megatron-LM runs the point (not the zero-bubble, V or DualPipe
  // schedules).
  if (megatron_unsupported(*s.config).empty()) {
    row.megatron_args = format_megatron_args(export_megatron_args(*s.config).options, false);
  }
  try {
    const RunSummary summary =
        point_summary(*s.config, gpu, comm, samples, all_microbatches, row.extrapolated);
    if (summary.distribution) row.distribution = summary.distribution->step;
    row.step_time_s = summary.iteration_time_s;
    row.tokens_per_s_per_gpu = summary.tokens_per_s_per_gpu;
    row.mfu = summary.mfu;
    row.peak_bytes = summary.peak_bytes;
    row.hbm_bytes = summary.hbm_bytes;
    row.fits = summary.fits_in_memory;
    row.binding = summary.walls.binding;
  } catch (const std::exception& e) {
    row.error = e.what();
    if (row.error.empty()) row.error = "simulation failed";
  }
  return row;
}

}  // namespace wallsim::models
