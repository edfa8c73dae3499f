// The three stages a sweep point goes through: the layout rules, the analytical memory check,
// then the simulation.
//
// Layout rules: those of `wallsim run` (make_layout, via run_config_from_json on the point's
// config) plus two of the sweep's own: an interleaved schedule (vpp > 1) needs the layers to
// divide evenly into pp·vpp chunks (Megatron's interleaved schedule requires it); and with
// tp = 1, sequence parallelism off is the same layout as on, so only one of them is kept.
// Memory: memory_report's analytical peak of the worst stage must fit in HBM (`wallsim memory`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "models/run_config.hpp"
#include "models/sweep/sweep_config.hpp"
#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_space.hpp"
#include "sim/hw/gpu_profile.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim::models {

enum class PointStage { pruned_by_layout, pruned_by_memory, to_simulate };

struct ScreenedPoint {
  std::int64_t index = 0;
  SweepPoint point;
  PointStage stage = PointStage::pruned_by_layout;
  std::string reason_key;           // the JSON path a layout rule failed on, or "memory"
  std::string reason;               // the whole message
  double peak_bytes = 0;            // analytical, when the layout is valid
  std::optional<RunConfig> config;  // when the layout is valid
};

// `compute_capability` (major·10 + minor) sizes the cuBLAS workspaces, as in `wallsim run`.
ScreenedPoint screen_point(const SweepBase& base, const SweepSpace& space, std::int64_t index,
                           double hbm_bytes, int compute_capability = 90);

// Simulates a point that passed screening; a failing simulation gives a row with its error.
// With samples > 1, replays that many seeded steps of the varied run on this thread: the row
// describes the median step and carries the spread.
SweepRow simulate_point(const ScreenedPoint& screened, const GpuProfile& gpu,
                        const CommProfile& comm, double hbm_bytes, int samples = 1);

}  // namespace wallsim::models
