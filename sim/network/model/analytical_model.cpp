#include "sim/network/model/analytical_model.hpp"

namespace wallsim {

void AnalyticalModel::start(const CollectivePlan& plan, Done done, double multiplicity) {
  count_link_bytes(plan, multiplicity);
  engine_.schedule_after(contention_free_time(plan, capacity_Bps_), std::move(done));
}

}  // namespace wallsim
