// How well a profile predicts measured points: every raw point is predicted through the real
// model (GpuModel for kernels, the `analytical` network model for collectives) and compared.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "calibration/profile.hpp"
#include "calibration/raw/raw_data.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim {

struct PointResidual {
  std::string
      op_class;       // "gemm bf16", "attention backward", "memory copy", "all_reduce intra", ...
  std::string label;  // the point, e.g. "8192x8192x8192 x1"
  double measured_s = 0;
  double predicted_s = 0;
  double relative_error() const { return (predicted_s - measured_s) / measured_s; }
};

// Collective points need `cluster` (InputError without one). Collective points are predicted
// with their recorded algorithm and protocol forced, on the first ranks/nodes GPUs of each node.
std::vector<PointResidual> predict_points(const Profile& profile,
                                          const std::optional<ClusterSpec>& cluster,
                                          const std::vector<RawFile>& raws);

struct ClassResiduals {
  std::string op_class;
  int points = 0;
  double median_abs_error = 0;  // of |relative error|
  double max_abs_error = 0;
  std::vector<PointResidual> worst;  // up to 3, largest |relative error| first
};

// One entry per op class, in order of first appearance.
std::vector<ClassResiduals> summarize_residuals(const std::vector<PointResidual>& residuals);

// A table: class, points, median and max |error| in %, and the worst points.
void print_residuals(std::ostream& out, const std::vector<ClassResiduals>& classes);

}  // namespace wallsim
