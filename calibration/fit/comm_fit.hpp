// Fitting the `comm` section of a profile from nccl-tests style measurements (pure functions).
//
// Step 1, per series (op, algorithm, protocol, ranks, nodes): least squares of
//   time = alpha + bytes · busfactor(op, ranks) / busbw
// (relative error), which gives the series' latency alpha and bus bandwidth. Step 2 maps the
// series onto the profile's parameters through the same equations sim/network uses
// (sim/network/README.md), with line rates from the cluster file; whatever the data cannot
// determine is kept from the base profile. calibration/README.md lists every mapping.
#pragma once

#include <string>
#include <vector>

#include "calibration/raw/raw_data.hpp"
#include "sim/network/collective/comm_profile.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim {

struct CollectiveSeries {
  CollectiveOp op;
  Algorithm algorithm;
  Protocol protocol;
  int ranks = 0;
  int nodes = 0;
  double alpha_us = 0;
  double busbw_GBps = 0;
  int points = 0;
  int per_node() const { return ranks / nodes; }
};

// Series with at least two distinct sizes. Multi-node ring Simple all-reduce points below NCCL's
// ring-plateau threshold (bytes / (ring_channels · ranks) < 64) are left out: their latency
// lacks the plateau factor the larger ones pay, so one line cannot fit both.
std::vector<CollectiveSeries> fit_collective_series(const std::vector<CollectivePoint>& points,
                                                    int ring_channels);

struct CommFit {
  CommProfile profile;
  std::vector<std::string> fitted;  // the comm keys the data determined, for provenance
};

CommFit fit_comm(const std::vector<CollectiveSeries>& series, const CommProfile& base,
                 const ClusterSpec& cluster);

}  // namespace wallsim
