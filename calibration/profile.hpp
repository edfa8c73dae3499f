// A calibration profile: everything wallsim knows about one GPU type, as data.
//
// A profile file (calibration/profiles/<name>.json) has a `provenance` block (source, date,
// hardware, tool), a `gpu` section (compute, HBM, kernel efficiencies: sim/hw) and a `comm`
// section (NCCL-side efficiencies and latencies: sim/network). See calibration/README.md.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/hw/gpu_profile.hpp"
#include "sim/network/collective/comm_profile.hpp"

namespace wallsim {

struct Profile {
  std::string name;
  std::string source;  // provenance.source, for reports
  GpuProfile gpu;
  CommProfile comm;
};

// Loads a profile file; InputError on anything malformed.
Profile load_profile(const std::string& path);

// Parses a profile document already in memory; `where` names it in errors (a file, or a run
// config holding it inline).
Profile parse_profile(const nlohmann::json& document, const std::string& where,
                      const std::string& json_path = "");

// The shipped profile for a GPU name ("h100-sxm" -> <data
// root>/calibration/profiles/h100-sxm.json).
std::string shipped_profile_path(const std::string& gpu_name);

}  // namespace wallsim
