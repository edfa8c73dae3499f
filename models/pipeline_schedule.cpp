#include "models/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/schedules/builtin_schedules.hpp"

namespace wallsim::models {
namespace {

std::deque<PipelineSchedule>& registry() {
  static std::deque<PipelineSchedule> schedules{
      one_f_one_b_schedule(),   interleaved_1f1b_schedule(), zb_h1_schedule(),   zb_h2_schedule(),
      zero_bubble_v_schedule(), dualpipe_v_schedule(),       dualpipe_schedule()};
  return schedules;
}

bool releases(const ScheduleItem& item, bool splits_weight_gradients) {
  return item.pass == (splits_weight_gradients ? Pass::kWeight : Pass::kBackward);
}

}  // namespace

const std::deque<PipelineSchedule>& pipeline_schedules() {
  return registry();
}

std::vector<std::string> pipeline_schedule_names() {
  std::vector<std::string> names;
  for (const auto& schedule : registry()) names.push_back(schedule.name);
  return names;
}

const PipelineSchedule* find_pipeline_schedule(std::string_view name) {
  for (const auto& schedule : registry()) {
    if (schedule.name == name) return &schedule;
  }
  return nullptr;
}

const PipelineSchedule& register_pipeline_schedule(PipelineSchedule schedule) {
  if (schedule.name.empty() || find_pipeline_schedule(schedule.name) != nullptr) {
    throw std::invalid_argument("pipeline schedule name \"" + schedule.name +
                                "\" is empty or already registered");
  }
  if (!schedule.rejects || !schedule.order) {
    throw std::invalid_argument("pipeline schedule \"" + schedule.name +
                                "\" needs its rejects and order functions");
  }
  if (!schedule.virtual_stage) schedule.virtual_stage = chunk_major_virtual_stage;
  registry().push_back(std::move(schedule));
  return registry().back();
}

std::int64_t chunk_major_virtual_stage(const PipelineShape& shape, std::int64_t stage,
                                       std::int64_t chunk) {
  return chunk * shape.pp + stage;
}

std::int64_t v_shape_virtual_stage(const PipelineShape& shape, std::int64_t stage,
                                   std::int64_t chunk) {
  return chunk == 0 ? stage : 2 * shape.pp - 1 - stage;
}

VirtualStages::VirtualStages(const PipelineSchedule& schedule, const PipelineShape& shape)
    : vpp_(shape.vpp),
      chains_(schedule.chains),
      of_(static_cast<std::size_t>(shape.pp * shape.vpp), -1),
      place_(static_cast<std::size_t>(shape.pp * shape.vpp), StageChunk{-1, -1}) {
  if (chains_ < 1 || (shape.pp * shape.vpp) % chains_ != 0) {
    throw std::logic_error("pipeline schedule \"" + schedule.name +
                           "\": pp·vpp chunks do not divide into its chains");
  }
  for (std::int64_t stage = 0; stage < shape.pp; ++stage) {
    for (std::int64_t chunk = 0; chunk < shape.vpp; ++chunk) {
      const std::int64_t v = schedule.virtual_stage(shape, stage, chunk);
      if (v < 0 || v >= count() || place_[static_cast<std::size_t>(v)].stage >= 0) {
        throw std::logic_error("pipeline schedule \"" + schedule.name +
                               "\": its virtual stages are not a placement of pp·vpp chunks");
      }
      of_[static_cast<std::size_t>(stage * vpp_ + chunk)] = v;
      place_[static_cast<std::size_t>(v)] = {stage, chunk};
    }
  }
}

std::int64_t VirtualStages::of(std::int64_t stage, std::int64_t chunk) const {
  return of_.at(static_cast<std::size_t>(stage * vpp_ + chunk));
}

StageChunk VirtualStages::place(std::int64_t virtual_stage) const {
  return place_.at(static_cast<std::size_t>(virtual_stage));
}

std::optional<std::int64_t> VirtualStages::next(std::int64_t stage, std::int64_t chunk,
                                                std::int64_t step) const {
  const std::int64_t v = of(stage, chunk);
  const std::int64_t to = position(v) + step;
  if (to < 0 || to >= chain_length()) return std::nullopt;
  return v + step;
}

std::vector<StageChunk> VirtualStages::chain_starts() const {
  std::vector<StageChunk> starts;
  for (std::int64_t k = 0; k < chains_; ++k) starts.push_back(place(k * chain_length()));
  return starts;
}

std::vector<StageChunk> VirtualStages::chain_ends() const {
  std::vector<StageChunk> ends;
  for (std::int64_t k = 0; k < chains_; ++k) ends.push_back(place((k + 1) * chain_length() - 1));
  return ends;
}

std::vector<ScheduleItem> warmup_then_pairs(const std::vector<ScheduleItem>& forwards,
                                            const std::vector<ScheduleItem>& backwards,
                                            std::int64_t warmup) {
  const auto count = static_cast<std::size_t>(
      std::clamp<std::int64_t>(warmup, 0, static_cast<std::int64_t>(forwards.size())));
  std::vector<ScheduleItem> items(forwards.begin(), forwards.begin() + static_cast<long>(count));
  std::size_t next_backward = 0;
  for (std::size_t f = count; f < forwards.size(); ++f) {
    items.push_back(forwards[f]);
    items.push_back(backwards[next_backward++]);
  }
  while (next_backward < backwards.size()) items.push_back(backwards[next_backward++]);
  return items;
}

double peak_in_flight_bytes(const std::vector<ScheduleItem>& order,
                            const std::vector<double>& chunk_bytes, bool splits_weight_gradients,
                            const std::vector<double>& freed_by_backward,
                            const BackwardTransients& transients) {
  const auto of = [](const std::vector<double>& bytes, std::size_t c) {
    return bytes.empty() ? 0.0 : bytes[c];
  };
  double held = 0;
  double peak = 0;
  for (const auto& item : order) {
    const auto c = static_cast<std::size_t>(item.chunk);
    const double bytes = chunk_bytes[c];
    const double until_b = of(freed_by_backward, c);
    const bool backward = item.pass == Pass::kBackward;
    if (item.forward()) held += bytes + until_b;
    if (backward) peak = std::max(peak, held + of(transients.at_start, c));
    if (releases(item, splits_weight_gradients)) held -= bytes;
    if (backward) held -= until_b;
    if (backward) peak = std::max(peak, held + of(transients.at_end, c));
    peak = std::max(peak, held);
  }
  return peak;
}

std::int64_t peak_in_flight_chunks(const std::vector<ScheduleItem>& order,
                                   bool splits_weight_gradients) {
  std::int64_t held = 0;
  std::int64_t peak = 0;
  for (const auto& item : order) {
    if (item.forward()) ++held;
    if (releases(item, splits_weight_gradients)) --held;
    peak = std::max(peak, held);
  }
  return peak;
}

}  // namespace wallsim::models
