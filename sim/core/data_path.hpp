// Finding data files (configs, calibration profiles) that a config names by path.
//
// A relative reference is tried against the directory of the file that names it, then
// against the wallsim data root: $WALLSIM_HOME when set, else the source tree this binary
// was built from.
#pragma once

#include <optional>
#include <string>

namespace wallsim {

// The data root (no trailing slash).
std::string data_root();

// Resolves `reference` as described above; nullopt when no candidate exists. `referring_file`
// may be empty (reference given on the command line: tried against the working directory).
std::optional<std::string> resolve_data_path(const std::string& reference,
                                             const std::string& referring_file);

// The whole file at `path`, byte for byte; throws InputError "<path>: cannot read the file".
std::string read_data_file(const std::string& path);

}  // namespace wallsim
