#include "calibration/profile.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/hw/host_profile.hpp"

namespace wallsim {

Profile load_profile(const std::string& path) {
  return parse_profile(load_json_file(path), path);
}

Profile parse_profile(const nlohmann::json& document, const std::string& where,
                      const std::string& json_path) {
  JsonObject root(JsonNode(document, where, json_path));
  Profile profile;
  profile.name = root.string("name");
  {
    JsonObject provenance(root.at("provenance"));
    profile.source = provenance.string("source");
    provenance.string("date");
    provenance.string("hardware");
    provenance.string("tool");
    provenance.finish();
  }
  profile.gpu = parse_gpu_profile(root.at("gpu"));
  profile.comm = parse_comm_profile(root.at("comm"));
  if (auto host = root.find("host")) profile.gpu.host = parse_host_profile(*host);
  root.finish();
  return profile;
}

std::string shipped_profile_path(const std::string& gpu_name) {
  return data_root() + "/calibration/profiles/" + gpu_name + ".json";
}

}  // namespace wallsim
