#include "sim/hw/host_profile.hpp"

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"

namespace wallsim {

HostProfile parse_host_profile(const JsonNode& host_section) {
  JsonObject host(host_section);
  HostProfile profile;
  profile.present = true;
  profile.kernel_issue = Time::from_us(host.number("kernel_issue_us", 0, 1e6));
  profile.graph_issue = Time::from_us(host.number("graph_issue_us", 0, 1e6));
  if (auto sources = host.find("sources")) {
    JsonObject object(*sources);
    for (const auto& [key, value] : sources->json().items()) object.at(key).as_string();
    object.finish();
  }
  host.finish();
  return profile;
}

}  // namespace wallsim
