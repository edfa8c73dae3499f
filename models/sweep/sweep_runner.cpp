#include "models/sweep/sweep_runner.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "models/sweep/sweep_evaluate.hpp"
#include "sim/core/parallel_for.hpp"

namespace wallsim::models {
namespace {

// On NVLink domains larger than a node whose size is not a power of two (an NVL72 rack of 72),
// groups of 32 or 64 ranks laid out in rank order can straddle two domains: when the job spans
// several and the sweep keeps one placement, say which share to try beside it.
std::optional<std::string> placement_note(const RunConfig& c, std::int64_t num_gpus,
                                          const SweepSpace& space) {
  const std::int64_t domain = c.cluster.gpus_per_domain();
  const std::int64_t node = c.cluster.gpus_per_node;
  if (space.placement != std::vector<std::optional<std::int64_t>>{std::nullopt} || node < 1 ||
      domain <= node || num_gpus <= domain) {
    return std::nullopt;
  }
  std::int64_t share = node;  // the largest node multiple of power-of-two size within the domain
  for (std::int64_t s = 1; s <= domain; s *= 2) {
    if (s % node == 0) share = s;
  }
  if (share >= domain || share % node != 0) return std::nullopt;
  return "every point keeps the base config's NVLink domains of " + std::to_string(domain) +
         " GPUs, where groups of " + std::to_string(share / 2) + " or " + std::to_string(share) +
         " ranks (ep·etp, tp·cp) can straddle two domains; --vary placement=" +
         std::to_string(domain) + "," + std::to_string(share) + " also tries " +
         std::to_string(share) +
         " GPUs of each domain (placement.gpus_per_domain), which keeps "
         "them inside one";
}

SweepReport report_header(const SweepBase& base, const SweepSpace& space, const ShardSpec& shard) {
  const RunConfig& c = base.parsed;
  SweepReport report;
  report.model = c.model.name;
  report.cluster = c.cluster.name;
  report.num_gpus = base.num_gpus;
  report.seq_len = c.training.seq_len;
  report.global_batch = c.training.global_batch;
  report.fidelity = to_string(c.simulation.fidelity);
  report.network = c.simulation.network;
  report.fingerprint = sweep_fingerprint(base, space);
  report.shard = shard;
  report.space = describe_space(space);
  report.notes = sweep_notes(space);
  if (auto note = placement_note(c, base.num_gpus, space)) report.notes.push_back(*note);
  return report;
}

void count_screened(const std::vector<ScreenedPoint>& screened, SweepCounts& counts) {
  for (const auto& s : screened) {
    ++counts.points;
    if (s.stage == PointStage::pruned_by_layout) {
      ++counts.pruned_by_layout;
      ++counts.layout_reasons[s.reason_key];
      counts.reason_examples.emplace(s.reason_key, s.reason);
    } else if (s.stage == PointStage::pruned_by_memory) {
      ++counts.pruned_by_memory;
    } else if (s.stage == PointStage::pruned_by_recompute) {
      ++counts.pruned_by_recompute;
    } else {
      ++counts.simulated;
    }
  }
}

// Admits simulations in the order they ask while the sum of their footprints stays within the
// budget; one that does not fit waits for running ones to finish (and holds back later ones,
// so a large point is not starved by a stream of small ones). A point larger than the whole
// budget runs alone.
class FootprintGate {
 public:
  explicit FootprintGate(double budget) : budget_(budget) {}

  void acquire(double footprint) {
    std::unique_lock lock(mutex_);
    const std::int64_t ticket = next_ticket_++;
    changed_.wait(lock, [&] {
      return ticket == serving_ && (in_use_ == 0 || in_use_ + footprint <= budget_);
    });
    ++serving_;
    in_use_ += footprint;
    changed_.notify_all();
  }

  void release(double footprint) {
    const std::lock_guard lock(mutex_);
    in_use_ -= footprint;
    if (in_use_ < 1) in_use_ = 0;  // sums of doubles: no residue keeps a large point waiting
    changed_.notify_all();
  }

 private:
  double budget_;
  double in_use_ = 0;
  std::int64_t next_ticket_ = 0;
  std::int64_t serving_ = 0;
  std::mutex mutex_;
  std::condition_variable changed_;
};

// Gives the pages freed by a large simulation back to the system, so that the next large one,
// which may run on another thread and so allocate from another of glibc's per-thread arenas,
// does not add its pages to these.
void return_freed_pages() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace

double simulation_footprint(const RunConfig& config, std::int64_t microbatches) {
  // The step's graphs hold every micro-batch's pass through every layer of each simulated
  // rank: one rank per stage in symmetric fidelity (the stages together hold each layer once),
  // every rank in full fidelity.
  const Layout& layout = config.layout;
  if (microbatches <= 0) microbatches = layout.num_microbatches;
  double units = static_cast<double>(microbatches) * static_cast<double>(config.model.layers);
  if (config.simulation.fidelity == Fidelity::kFull) {
    units *= static_cast<double>(layout.ranks().world_size() / layout.sizes.pp);
  }
  return units * kFootprintBytesPerLayerPass;
}

double remaining_seconds(double elapsed_s, double work_done) {
  if (work_done <= 0 || elapsed_s <= 0) return 0;
  return elapsed_s * std::max(0.0, 1.0 - work_done) / work_done;
}

std::string sweep_fingerprint(const SweepBase& base, const SweepSpace& space, int samples,
                              SweepObjective objective, bool all_recompute, bool all_microbatches) {
  std::string text = base.document.dump();
  for (const auto& [knob, values] : describe_space(space)) text += "|" + knob + "=" + values;
  // Only a sampled sweep adds these, so the fingerprints of single-step sweeps stay as they were.
  if (samples > 1 || objective != SweepObjective::step) {
    text += "|samples=" + std::to_string(samples) + "|objective=" + to_string(objective);
  }
  if (all_recompute) text += "|all_recompute";
  if (all_microbatches) text += "|all_microbatches";
  return fingerprint(text);
}

std::vector<std::string> sweep_notes(const SweepSpace& space) {
  std::vector<std::string> notes;
  if (std::any_of(space.cp.begin(), space.cp.end(), [](std::int64_t cp) { return cp > 1; })) {
    notes.push_back(
        "cp > 1 exchanges attention over CP as the config's parallel.cp_comm_type says "
        "(default: the p2p ring with the load-balanced split)");
  }
  return notes;
}

SweepReport run_sweep(const SweepBase& base, const SweepSpace& space, const SweepHardware& hw,
                      const SweepRunOptions& options) {
  SweepReport report = report_header(base, space, options.shard);
  report.fingerprint = sweep_fingerprint(base, space, options.samples, options.objective,
                                         options.all_recompute, options.all_microbatches);
  report.samples = options.samples;
  report.objective = options.objective;
  const auto indices = shard_indices(space.size(), options.shard);
  std::vector<ScreenedPoint> screened(indices.size());
  parallel_for(static_cast<std::int64_t>(indices.size()), options.jobs, [&](std::int64_t i) {
    const auto k = static_cast<std::size_t>(i);
    screened[k] = screen_point(base, space, indices[k], hw.hbm_bytes, hw.gpu.compute_capability);
  });
  if (!options.all_recompute) {
    prune_dominated_recompute(base, space, screened, hw.hbm_bytes, hw.gpu.compute_capability);
  }
  count_screened(screened, report.counts);
  if (options.on_screened) options.on_screened(report.counts);

  std::map<std::int64_t, const SweepRow*> done;
  for (const auto& row : options.already_done) done.emplace(row.index, &row);
  std::vector<const ScreenedPoint*> to_simulate;
  for (const auto& s : screened) {
    if (s.stage != PointStage::to_simulate) continue;
    auto it = done.find(s.index);
    if (it != done.end()) {
      report.rows.push_back(*it->second);
    } else {
      to_simulate.push_back(&s);
    }
  }
  std::mutex progress_mutex;
  std::int64_t finished = static_cast<std::int64_t>(report.rows.size());
  double work_total = 0;
  double work_done = 0;
  FootprintGate gate(options.simulation_memory_bytes);
  // Simulates `points` on the worker threads; the rows in the order of `points`.
  auto simulate_all = [&](const std::vector<const ScreenedPoint*>& points) {
    std::vector<SweepRow> simulated(points.size());
    std::vector<double> footprints(points.size());  // of the larger simulation a point runs
    std::vector<double> work(points.size());        // of all it runs
    for (std::size_t k = 0; k < points.size(); ++k) {
      // An extrapolated point simulates its two short steps one after the other (and the whole
      // step after them only where they disagree, seldom: not counted).
      const RunConfig& config = *points[k]->config;
      const auto steady = options.all_microbatches
                              ? std::nullopt
                              : steady_state_microbatches(config, options.samples);
      footprints[k] = simulation_footprint(config, steady ? steady->second : 0);
      work[k] = footprints[k] + (steady ? simulation_footprint(config, steady->first) : 0);
      work_total += work[k];
    }
    parallel_for(static_cast<std::int64_t>(points.size()), options.jobs, [&](std::int64_t i) {
      const auto k = static_cast<std::size_t>(i);
      const double footprint = footprints[k];
      gate.acquire(footprint);
      try {
        simulated[k] = simulate_point(*points[k], hw.gpu, hw.comm, hw.hbm_bytes, options.samples,
                                      options.all_microbatches);
      } catch (...) {
        gate.release(footprint);
        throw;
      }
      gate.release(footprint);
      if (footprint > options.simulation_memory_bytes / 2) return_freed_pages();
      const std::lock_guard lock(progress_mutex);
      ++finished;
      work_done += work[k];
      const double share = work_total > 0 ? std::min(1.0, work_done / work_total) : 1.0;
      if (options.on_row) options.on_row(simulated[k], finished, report.counts.simulated, share);
    });
    return simulated;
  };
  std::vector<SweepRow> simulated = simulate_all(to_simulate);
  report.rows.insert(report.rows.end(), simulated.begin(), simulated.end());

  // A lighter recompute that did not fit after all: its next heavier one, round by round.
  std::size_t checked_from = 0;
  while (!options.all_recompute && checked_from < report.rows.size()) {
    std::set<std::int64_t> have;
    for (const auto& row : report.rows) have.insert(row.index);
    std::vector<ScreenedPoint> fallbacks;
    const std::size_t checked_to = report.rows.size();
    for (std::size_t r = checked_from; r < checked_to; ++r) {
      auto next =
          recompute_fallback(base, space, report.rows[r], hw.hbm_bytes, hw.gpu.compute_capability);
      if (!next || !have.insert(next->index).second) continue;
      ++report.counts.simulated;
      ++report.counts.recompute_fallbacks;
      auto it = done.find(next->index);
      if (it != done.end()) {
        report.rows.push_back(*it->second);
      } else {
        fallbacks.push_back(std::move(*next));
      }
    }
    checked_from = checked_to;
    std::vector<const ScreenedPoint*> points;
    for (const auto& s : fallbacks) points.push_back(&s);
    simulated = simulate_all(points);
    report.rows.insert(report.rows.end(), simulated.begin(), simulated.end());
  }
  report.counts.failed = static_cast<std::int64_t>(std::count_if(
      report.rows.begin(), report.rows.end(), [](const SweepRow& r) { return r.failed(); }));
  sort_rows(report.rows, options.objective);
  return report;
}

}  // namespace wallsim::models
