// Cluster files, and the topology they build at a small GPU count.
#include "fuzz_input.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/network/topology/topology.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto document = wallsim::fuzz::as_json(data, size);
  if (!document) return 0;
  try {
    const wallsim::ClusterSpec spec =
        wallsim::parse_cluster_spec(wallsim::JsonNode(*document, "fuzz.json", ""));
    // Keep the topology small: the fuzzer looks for crashes, not for big allocations.
    if (spec.gpus_per_node <= 64) wallsim::Topology topology(spec, 2 * spec.gpus_per_node);
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
