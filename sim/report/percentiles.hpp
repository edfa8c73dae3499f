// p10, p50, p90 and the mean of a list of values (Percentiles, run_summary.hpp).
#pragma once

#include <vector>

#include "sim/report/run_summary.hpp"

namespace wallsim {

// Linear interpolation between order statistics (numpy's default); all zero for no values.
Percentiles percentiles(std::vector<double> values);

}  // namespace wallsim
