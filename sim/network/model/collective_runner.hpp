// Running one collective alone on a fresh engine: what `wallsim collective` and the
// validation tests ask.
#pragma once

#include <string>

#include "sim/network/collective/comm_profile.hpp"
#include "sim/network/collective/planner.hpp"

namespace wallsim {

struct CollectiveResult {
  CollectiveOp op;
  Algorithm algorithm;
  Protocol protocol;
  int ranks = 0;
  double bytes = 0;
  Time time;
  double algbw_GBps() const { return bytes / time.seconds() / 1e9; }
  double busbw_GBps() const { return algbw_GBps() * bus_bandwidth_factor(op, ranks); }
};

CollectiveResult run_collective(const std::string& network_model, const Topology& topology,
                                const CommProfile& profile, const CollectiveRequest& request);

}  // namespace wallsim
