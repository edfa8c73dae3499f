// `wallsim calibrate fit`: a calibration profile from raw microbenchmark files.
//
// The fitted profile is the base profile's document with every value the data determine
// replaced (kernel_fit.hpp, comm_fit.hpp), a `sources` entry naming the fit for each, and a new
// provenance block (tools, hardware and latest date of the raw files). Values the data cannot
// determine stay as the base has them. The result is parsed back (parse_profile) before it is
// returned, so a fit never writes a profile wallsim would reject.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "calibration/raw/raw_data.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim {

struct ProfileFit {
  nlohmann::json document;          // the fitted profile, ready to write
  Profile profile;                  // the same, parsed
  std::vector<std::string> fitted;  // keys the data determined ("gpu.gemm.best_tflops.bf16", ...)
};

// `cluster` gives the line rates the comm fit divides by; InputError when collective points are
// present without one, or when a GEMM dtype is missing from the base's peak_tflops.
ProfileFit fit_profile(const nlohmann::json& base_document, const std::string& base_where,
                       const std::vector<RawFile>& raws, const std::optional<ClusterSpec>& cluster);

}  // namespace wallsim
