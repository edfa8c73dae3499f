#include "models/launch_args/cluster_reference.hpp"

#include <filesystem>

#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {

std::string cluster_reference(const std::string& cluster) {
  const std::string shipped = "configs/clusters/" + cluster + ".json";
  if (resolve_data_path(shipped, "")) return shipped;
  if (std::filesystem::exists(cluster)) {
    return std::filesystem::absolute(cluster).lexically_normal().string();
  }
  throw InputError("command line", "--cluster", cluster,
                   "no such cluster file (give a path, or a shipped name such as dgx-h100)");
}

}  // namespace wallsim::models
