// The three stages a sweep point goes through: the layout rules, the analytical memory check,
// then the simulation.
//
// Layout rules: those of `wallsim run` (make_layout, via run_config_from_json on the point's
// config) plus two of the sweep's own: an interleaved schedule (vpp > 1) needs the layers to
// divide evenly into pp·vpp chunks (Megatron's interleaved schedule requires it); and with
// tp = 1, sequence parallelism off is the same layout as on, so only one of them is kept.
// Memory: memory_report's analytical peak of the worst stage must fit in HBM (`wallsim memory`).
// Recompute: recomputing activations only adds work to a step (the same ops, plus forward
// passes run again before the backward), so a heavier recompute of a layout that fits with a
// lighter one is slower, and it is not simulated (prune_dominated_recompute); should the lighter
// one's simulation not fit after all, the next heavier one is simulated (recompute_fallback).
// Long 1F1B pipelines: a step of many more micro-batches than stages is extrapolated from the
// steps of pp + 1 and pp + 2 micro-batches (steady_state_microbatches) instead of simulated
// whole.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/run_config.hpp"
#include "models/sweep/sweep_config.hpp"
#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_space.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim::models {

enum class PointStage { pruned_by_layout, pruned_by_memory, pruned_by_recompute, to_simulate };

struct ScreenedPoint {
  std::int64_t index = 0;
  SweepPoint point;
  PointStage stage = PointStage::pruned_by_layout;
  std::string reason_key;  // the JSON path a layout rule failed on, "memory" or "recompute"
  std::string reason;      // the whole message
  double peak_bytes = 0;   // analytical, when the layout is valid
  std::optional<RunConfig> config;  // when the layout is valid
};

// `compute_capability` (major·10 + minor) sizes the cuBLAS workspaces, as in `wallsim run`.
ScreenedPoint screen_point(const SweepBase& base, const SweepSpace& space, std::int64_t index,
                           double hbm_bytes, int compute_capability = 90);

// Prunes each point of `screened` (one shard's) whose layout also passes the memory check with a
// lighter recompute (none < selective < full) among the space's. Siblings outside the shard are
// screened again (screening is deterministic), so the shards of a sweep prune the same points.
void prune_dominated_recompute(const SweepBase& base, const SweepSpace& space,
                               std::vector<ScreenedPoint>& screened, double hbm_bytes,
                               int compute_capability = 90);

// After `row`'s simulation did not fit in memory or failed: the next heavier recompute of the same
// layout that passes the memory check (pruned as dominated by `row`'s point), or nothing.
std::optional<ScreenedPoint> recompute_fallback(const SweepBase& base, const SweepSpace& space,
                                                const SweepRow& row, double hbm_bytes,
                                                int compute_capability = 90);

// The micro-batch counts a point's step is extrapolated from, when it is (else nothing).
//
// In the 1F1B schedule stage s runs min(pp − s − 1, m) warm-up forwards, m − (pp − s − 1)
// forward/backward pairs and the remaining backwards, so past the warm-up one more micro-batch
// adds one pair to every stage's steady phase; the micro-batches of a step are the same ops and
// the replay is deterministic. Once the pipeline runs at its steady pace each added pair
// lengthens the step, and each part of its time split, by the same period: step(m) = step(b) +
// (m − b)·(step(b) − step(a)) with a = pp + 1 and b = pp + 2 (one past pp, where a two-stage
// pipeline's data-parallel overlap is still settling). The memory held is that of at most pp
// micro-batches in flight, as in the whole step. The short steps are used only where they end on
// the same rank with the same peak memory and the step already grows by at least what any rank's
// own work (kernels, host, communication within its stage) grows per micro-batch; elsewhere the
// point is simulated whole (simulate_point).
//
// This is an approximation, measured rather than assumed (README, `wallsim sweep`): the pace
// can still drift after pp + 2 micro-batches as the stages' communication shifts against each
// other, and on the Qwen3-235B-A22B default space some extrapolated steps differ from the whole
// ones by a few tenths of a percent. Not extrapolated: other schedules (interleaved,
// zero-bubble, DualPipe), pp = 1, sampled steps (samples > 1 or a `variability` section: their
// micro-batches differ), and steps of at most 2·pp + 3 micro-batches (extrapolating would
// simulate as many).
struct SteadyStateMicrobatches {
  std::int64_t first = 0;   // pp + 1
  std::int64_t second = 0;  // pp + 2
};
std::optional<SteadyStateMicrobatches> steady_state_microbatches(const RunConfig& config,
                                                                 int samples = 1);

// Simulates a point that passed screening; a failing simulation gives a row with its error.
// With samples > 1, replays that many seeded steps of the varied run on this thread: the row
// describes the median step and carries the spread. Unless `all_microbatches`, a long 1F1B
// step is extrapolated (steady_state_microbatches; the row says so).
SweepRow simulate_point(const ScreenedPoint& screened, const GpuProfile& gpu,
                        const CommProfile& comm, double hbm_bytes, int samples = 1,
                        bool all_microbatches = false);

}  // namespace wallsim::models
