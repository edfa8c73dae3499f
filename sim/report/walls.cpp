#include "sim/report/walls.hpp"

#include <cmath>
#include <utility>
#include <vector>

namespace wallsim {
namespace {

std::string largest(const std::vector<std::pair<const char*, double>>& parts) {
  const char* name = parts.front().first;
  double best = parts.front().second;
  for (const auto& [part, value] : parts) {
    if (value > best) {
      best = value;
      name = part;
    }
  }
  return name;
}

}  // namespace

Walls compute_walls(const TimeSplit& split, const ComputeExcess& excess,
                    const StageMemorySummary& worst_stage, double hbm_bytes, bool fits) {
  Walls walls;
  const double step = split.step_s > 0 ? split.step_s : 1;
  walls.compute.share = (split.compute_inefficiency_s + split.bubble_s + split.host_s) / step;
  std::vector<std::pair<const char*, double>> causes{{"bubble", split.bubble_s},
                                                     {"host", split.host_s}};
  for (int kind = 0; kind < kComputeKindCount; ++kind) {
    causes.emplace_back(category_name(category_at_slot(false, kind)), excess.seconds[kind]);
  }
  walls.compute.contributor = largest(causes);
  walls.communication.share = split.exposed_comm_total() / step;
  std::vector<std::pair<const char*, double>> groups;
  for (int g = 0; g < kCommGroupCount; ++g) {
    groups.emplace_back(category_name(category_at_slot(true, g)), split.exposed_comm_s[g]);
  }
  walls.communication.contributor = largest(groups);
  walls.memory.share = hbm_bytes > 0 ? worst_stage.peak / hbm_bytes : 0;
  walls.memory.contributor = largest({{"weights", worst_stage.weights},
                                      {"grads", worst_stage.grads},
                                      {"optimizer", worst_stage.optimizer},
                                      {"activations", worst_stage.activations},
                                      {"buffers", worst_stage.buffers},
                                      {"unit_buffers", worst_stage.unit_buffers},
                                      {"wgrad_placeholders", worst_stage.wgrad_placeholders},
                                      {"grad_transients", worst_stage.grad_transients}});
  if (!fits) {
    walls.binding = "memory";
    walls.binding_margin = walls.memory.share - 1;
  } else {
    walls.binding = walls.communication.share > walls.compute.share ? "communication" : "compute";
    walls.binding_margin = std::abs(walls.communication.share - walls.compute.share);
  }
  return walls;
}

}  // namespace wallsim
