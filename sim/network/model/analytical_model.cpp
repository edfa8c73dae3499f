#include "sim/network/model/analytical_model.hpp"

namespace wallsim {

void AnalyticalModel::start(const CollectivePlan& plan, Done done, double multiplicity) {
  count_link_bytes(plan, multiplicity);
  engine_.schedule_after(contention_free_time(plan, capacity_Bps_), std::move(done));
}

void AnalyticalModel::start_instances(std::span<const CollectivePlan> instances, Done done) {
  for (const CollectivePlan& copy : instances.subspan(1)) count_link_bytes(copy, 1.0);
  start(instances.front(), std::move(done), 1.0);
}

}  // namespace wallsim
