#include "sim/network/model/analytical_model.hpp"

#include <stdexcept>

namespace wallsim {

void AnalyticalModel::start(const CollectivePlan& plan, Done done, double multiplicity) {
  count_link_bytes(plan, multiplicity);
  engine_.schedule_after(contention_free_time(plan, capacity_Bps_), std::move(done));
}

namespace {

// The first instance's time alone; every instance's bytes (copies first, as they are counted).
struct AnalyticalPrepared final : PreparedCollective {
  Time duration;
  std::vector<std::pair<LinkId, double>> crossings;
};

}  // namespace

NetworkModel::Prepared AnalyticalModel::prepare(std::span<const CollectivePlan> instances) const {
  if (instances.empty()) throw std::invalid_argument("AnalyticalModel::prepare: no instance");
  auto prepared = std::make_shared<AnalyticalPrepared>();
  for (const CollectivePlan& copy : instances.subspan(1)) {
    append_link_bytes(copy, prepared->crossings);
  }
  append_link_bytes(instances.front(), prepared->crossings);
  prepared->crossings = per_link_bytes(prepared->crossings);
  prepared->duration = contention_free_time(instances.front(), capacity_Bps_);
  return prepared;
}

void AnalyticalModel::start_prepared(const Prepared& prepared, Done done) {
  const auto& mine = dynamic_cast<const AnalyticalPrepared&>(*prepared);
  count_link_bytes(mine.crossings);
  engine_.schedule_after(mine.duration, std::move(done));
}

}  // namespace wallsim
