// The three walls (sim/report/README.md): which of memory, communication and compute efficiency
// binds.
//
//   compute.share        = (compute_inefficiency + bubble) / step
//   communication.share  = exposed communication / step
//   memory.share         = peak bytes / HBM bytes of the worst rank (its "utilization")
//   binding              = memory when the peak does not fit, else the larger of compute and
//                          communication; binding_margin says by how much (run_summary.hpp)
// Each wall names its largest contributor: for communication the group with the most exposed
// time; for compute the bubble or the op category whose time exceeds its ideal most; for memory
// the largest component of the worst stage.
#pragma once

#include <array>

#include "sim/report/run_summary.hpp"

namespace wallsim {

struct ComputeExcess {
  // time beyond ideal by compute kind (op_category.hpp's slots: gemm, attention, elementwise,
  // optimizer)
  std::array<double, kComputeKindCount> seconds{};
};

Walls compute_walls(const TimeSplit& split, const ComputeExcess& excess,
                    const StageMemorySummary& worst_stage, double hbm_bytes, bool fits);

}  // namespace wallsim
