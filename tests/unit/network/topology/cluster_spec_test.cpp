#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/network/topology/cluster_spec.hpp"
#include "sim/network/topology/topology.hpp"

using wallsim::ClusterSpec;
using wallsim::InputError;
using wallsim::JsonNode;

namespace {

const std::string kClusterDir = std::string(WALLSIM_SOURCE_ROOT) + "/configs/clusters/";

nlohmann::json valid_cluster() {
  return nlohmann::json::parse(R"({
    "name": "test", "description": "a cluster for tests", "sources": {"node.gpu": "made up"},
    "node": {"gpu": "h100-sxm", "gpus_per_node": 8,
             "nvlink": {"bandwidth_GBps": 450, "latency_ns": 600, "nvswitch": true, "nvls": true},
             "nic": {"per_node": 8, "bandwidth_Gbps": 400, "pcie_bandwidth_GBps": 64,
                     "latency_ns": 150}},
    "fabric": {"scalable_unit_nodes": 32, "pod_scalable_units": 8, "leaf_oversubscription": 2,
               "switch_latency_ns": 300}
  })");
}

ClusterSpec parse(const nlohmann::json& document) {
  return wallsim::parse_cluster_spec(JsonNode(document, "test.json", ""));
}

// The message of the InputError that parsing `document` throws ("" when it does not throw).
std::string error_of(const nlohmann::json& document) {
  try {
    parse(document);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a valid cluster object parses into typed fields with units", "[cluster_spec]") {
  const ClusterSpec spec = parse(valid_cluster());
  CHECK(spec.name == "test");
  CHECK(spec.gpu == "h100-sxm");
  CHECK(spec.gpus_per_node == 8);
  CHECK(spec.nvlink.bandwidth_GBps == 450);
  CHECK(spec.nvlink.nvls);
  CHECK(spec.nic.per_node == 8);
  CHECK(spec.nic.bandwidth_Gbps == 400);
  CHECK(spec.fabric.leaf_oversubscription == 2);
  // Omitted: spine oversubscription defaults to non-blocking.
  CHECK(spec.fabric.spine_oversubscription == 1);
}

TEST_CASE("an unknown key is rejected naming its dotted path and the file", "[cluster_spec]") {
  auto document = valid_cluster();
  document["node"]["nvlink"]["bandwith_GBps"] = 450;
  const std::string message = error_of(document);
  CHECK_THAT(message, Catch::Contains("test.json"));
  CHECK_THAT(message, Catch::Contains("node.nvlink.bandwith_GBps"));
  CHECK_THAT(message, Catch::Contains("unknown key"));
}

TEST_CASE("a negative bandwidth is rejected naming path, value and what is allowed",
          "[cluster_spec]") {
  auto document = valid_cluster();
  document["node"]["nvlink"]["bandwidth_GBps"] = -3;
  const std::string message = error_of(document);
  CHECK_THAT(message, Catch::Contains("node.nvlink.bandwidth_GBps = -3"));
  CHECK_THAT(message, Catch::Contains("> 0"));
}

TEST_CASE("a value of the wrong type is rejected naming its path", "[cluster_spec]") {
  auto document = valid_cluster();
  document["node"]["gpus_per_node"] = "8";
  CHECK_THAT(error_of(document), Catch::Contains("node.gpus_per_node = \"8\": must be an integer"));
}

TEST_CASE("out-of-range and inconsistent values are rejected", "[cluster_spec]") {
  auto more_nics_than_gpus = valid_cluster();
  more_nics_than_gpus["node"]["nic"]["per_node"] = 9;
  CHECK_THAT(error_of(more_nics_than_gpus), Catch::Contains("node.nic.per_node = 9"));

  auto nvls_without_nvswitch = valid_cluster();
  nvls_without_nvswitch["node"]["nvlink"]["nvswitch"] = false;
  CHECK_THAT(error_of(nvls_without_nvswitch), Catch::Contains("node.nvlink.nvls"));

  auto undersubscribed = valid_cluster();
  undersubscribed["fabric"]["leaf_oversubscription"] = 0.5;
  CHECK_THAT(error_of(undersubscribed), Catch::Contains("fabric.leaf_oversubscription = 0.5"));

  auto no_gpus = valid_cluster();
  no_gpus["node"]["gpus_per_node"] = 0;
  CHECK_THAT(error_of(no_gpus), Catch::Contains("node.gpus_per_node = 0"));

  auto missing = valid_cluster();
  missing["node"]["nic"].erase("bandwidth_Gbps");
  CHECK_THAT(error_of(missing), Catch::Contains("node.nic.bandwidth_Gbps: is required"));
}

TEST_CASE("the NVLink domain defaults to one node and may span whole nodes", "[cluster_spec]") {
  const ClusterSpec node_domain = parse(valid_cluster());
  CHECK_FALSE(node_domain.nvlink.domain_gpus);
  CHECK(node_domain.gpus_per_domain() == 8);  // gpus_per_node

  // A rack of 18 nodes x 4 GPUs on one NVLink fabric (GB200 NVL72's shape).
  auto rack = valid_cluster();
  rack["node"]["gpus_per_node"] = 4;
  rack["node"]["nic"]["per_node"] = 4;
  rack["node"]["nvlink"]["domain_gpus"] = 72;
  const ClusterSpec spec = parse(rack);
  CHECK(spec.gpus_per_node == 4);
  CHECK(spec.gpus_per_domain() == 72);
}

TEST_CASE("a domain that is not whole nodes on an NVSwitch is rejected", "[cluster_spec]") {
  auto partial_node = valid_cluster();
  partial_node["node"]["nvlink"]["domain_gpus"] = 12;
  CHECK_THAT(error_of(partial_node),
             Catch::Contains("node.nvlink.domain_gpus = 12: must be a multiple of gpus_per_node "
                             "(8)"));

  auto below_node = valid_cluster();
  below_node["node"]["nvlink"]["domain_gpus"] = 4;
  CHECK_THAT(error_of(below_node),
             Catch::Contains("node.nvlink.domain_gpus = 4: must be an integer between 8 and"));

  auto no_switch = valid_cluster();
  no_switch["node"]["nvlink"]["nvswitch"] = false;
  no_switch["node"]["nvlink"]["nvls"] = false;
  no_switch["node"]["nvlink"]["domain_gpus"] = 16;
  CHECK_THAT(error_of(no_switch), Catch::Contains("node.nvlink.domain_gpus = 16: a domain of "
                                                  "several nodes needs an NVSwitch"));

  auto text = valid_cluster();
  text["node"]["nvlink"]["domain_gpus"] = "72";
  CHECK_THAT(error_of(text),
             Catch::Contains("node.nvlink.domain_gpus = \"72\": must be an integer"));
}

TEST_CASE("a missing cluster file is an InputError naming the file", "[cluster_spec]") {
  CHECK_THROWS_WITH(wallsim::load_cluster_spec(kClusterDir + "no-such-cluster.json"),
                    Catch::Contains("no-such-cluster.json"));
}

TEST_CASE("every shipped cluster parses and builds at 8 and 16,384 GPUs", "[cluster_spec]") {
  struct Shipped {
    const char* name;
    const char* gpu;
    double nvlink_GBps;
    bool nvls;
  };
  // Values from each file's own "sources" (hardware.md §1.2, §2.1).
  const Shipped shipped[] = {
      {"dgx-a100", "a100-sxm-80gb", 300, false}, {"dgx-h100", "h100-sxm", 450, true},
      {"dgx-h200", "h200-sxm", 450, true},       {"dgx-h800", "h100-sxm", 200, true},
      {"dgx-b200", "b200", 900, true},           {"dgx-b300", "b300", 900, true}};
  for (const Shipped& cluster : shipped) {
    INFO(cluster.name);
    const ClusterSpec spec = wallsim::load_cluster_spec(kClusterDir + cluster.name + ".json");
    CHECK(spec.name == cluster.name);
    CHECK(spec.gpu == cluster.gpu);
    CHECK(spec.nvlink.bandwidth_GBps == cluster.nvlink_GBps);
    CHECK(spec.nvlink.nvls == cluster.nvls);
    const wallsim::Topology small(spec, 8);
    CHECK(small.num_nodes() == 1);
    const wallsim::Topology large(spec, 16384);
    CHECK(large.num_nodes() == 2048);
    CHECK(large.has_core_tier());
  }
}

TEST_CASE("the NVL72 racks are 72-GPU NVLink domains of 4-GPU trays with a NIC per GPU",
          "[cluster_spec]") {
  // docs/reference/blackwell.md §1: 18 compute trays x 4 GPUs per rack, one NVLink domain, one
  // ConnectX-7 (GB200, 400 Gb/s) or ConnectX-8 (GB300, 800 Gb/s) per GPU.
  struct Rack {
    const char* name;
    const char* gpu;
    double nic_Gbps;
  };
  for (const Rack& rack : {Rack{"gb200-nvl72", "gb200", 400}, Rack{"gb300-nvl72", "gb300", 800}}) {
    INFO(rack.name);
    const ClusterSpec spec = wallsim::load_cluster_spec(kClusterDir + rack.name + ".json");
    CHECK(spec.gpu == rack.gpu);
    CHECK(spec.gpus_per_node == 4);
    CHECK(spec.gpus_per_domain() == 72);
    CHECK(spec.nvlink.nvls);
    CHECK(spec.nvlink.bandwidth_GBps == 900);
    CHECK(spec.nic.per_node == 4);
    CHECK(spec.nic.bandwidth_Gbps == rack.nic_Gbps);
    // 16,384 GPUs: 4096 trays; 227 whole racks and one of 40 GPUs.
    const wallsim::Topology large(spec, 16384);
    CHECK(large.num_nodes() == 4096);
    CHECK(large.num_domains() == 228);
    CHECK(large.counts().nvswitches == 228);
  }
}
