#include "models/sweep/sweep_evaluate.hpp"

#include <algorithm>
#include <exception>
#include <map>

#include "models/launch_args/megatron_export.hpp"
#include "models/memory.hpp"
#include "models/run/simulate.hpp"
#include "sim/core/input_error.hpp"

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

SweepRow simulate_point(const ScreenedPoint& s, const GpuProfile& gpu, const CommProfile& comm,
                        double hbm_bytes, int samples) {
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
    const RunSummary summary = samples > 1
                                   ? simulate_samples(*s.config, gpu, comm, samples, 1, {}).summary
                                   : simulate(*s.config, gpu, comm).summary;
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
