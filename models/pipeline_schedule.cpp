#include "models/pipeline_schedule.hpp"

#include <algorithm>

namespace wallsim::models {
namespace {

using Order = std::vector<ScheduleStep>;

// Megatron's get_schedule_table with groups of `group` micro-batches.
Order schedule_table(std::int64_t microbatches, std::int64_t vpp, std::int64_t group) {
  Order table;
  for (std::int64_t start = 0; start < microbatches; start += group) {
    const std::int64_t end = std::min(start + group, microbatches);
    for (std::int64_t chunk = 0; chunk < vpp; ++chunk) {
      for (std::int64_t mb = start; mb < end; ++mb) table.push_back({true, mb, chunk});
    }
  }
  return table;
}

Order interleave(const Order& forwards, const Order& backwards, std::size_t warmup) {
  Order steps(forwards.begin(), forwards.begin() + static_cast<long>(warmup));
  std::size_t next_backward = 0;
  for (std::size_t f = warmup; f < forwards.size(); ++f) {
    steps.push_back(forwards[f]);
    steps.push_back(backwards[next_backward++]);
  }
  while (next_backward < backwards.size()) steps.push_back(backwards[next_backward++]);
  return steps;
}

}  // namespace

std::vector<ScheduleStep> stage_schedule(std::int64_t pp, std::int64_t vpp,
                                         std::int64_t microbatches, std::int64_t stage) {
  const Order forwards = schedule_table(microbatches, vpp, vpp > 1 ? pp : microbatches);
  Order backwards = forwards;
  for (auto& step : backwards) {
    step.forward = false;
    step.chunk = vpp - 1 - step.chunk;
  }
  const auto total = static_cast<std::int64_t>(forwards.size());
  std::int64_t warmup = pp - stage - 1;
  if (vpp > 1) {
    warmup = microbatches == pp ? total : 2 * (pp - stage - 1) + (vpp - 1) * pp;
  }
  return interleave(forwards, backwards, static_cast<std::size_t>(std::min(warmup, total)));
}

double peak_in_flight_bytes(const std::vector<ScheduleStep>& schedule,
                            const std::vector<double>& chunk_bytes) {
  double held = 0;
  double peak = 0;
  for (const auto& step : schedule) {
    const double bytes = chunk_bytes[static_cast<std::size_t>(step.chunk)];
    held += step.forward ? bytes : -bytes;
    peak = std::max(peak, held);
  }
  return peak;
}

std::int64_t peak_in_flight_chunks(const std::vector<ScheduleStep>& schedule) {
  std::int64_t held = 0;
  std::int64_t peak = 0;
  for (const auto& step : schedule) {
    held += step.forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

}  // namespace wallsim::models
