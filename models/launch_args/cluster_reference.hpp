// The `cluster` value an imported run config carries (`wallsim import …`, `--cluster`).
#pragma once

#include <string>

namespace wallsim::models {

// A shipped cluster's name stays a data-root path (configs/clusters/NAME.json); a file is named
// by its absolute path so the config works wherever it is written. Throws InputError naming
// --cluster when neither exists.
std::string cluster_reference(const std::string& cluster);

}  // namespace wallsim::models
