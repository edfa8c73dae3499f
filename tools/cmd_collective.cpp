// `wallsim collective`: one collective (or a sweep of sizes) on a cluster, nccl-tests style.
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "calibration/profile.hpp"
#include "sim/core/byte_size.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/network/model/collective_runner.hpp"
#include "sim/network/model/network_model.hpp"
#include "tools/command.hpp"
#include "tools/group_spec.hpp"

namespace wallsim::cli {
namespace {

struct CollectiveOptions {
  std::string cluster;
  std::string op;
  std::string bytes;
  std::string group;
  int nodes = 0;
  int gpus_per_node = 0;
  int num_gpus = 0;
  std::string network = "flow";
  std::string algorithm;
  std::string protocol;
  std::string calibration;
  std::vector<std::string> overrides;
  bool json = false;
};

std::string resolve_cluster_path(const std::string& reference) {
  if (auto path = resolve_data_path(reference, "")) return *path;
  if (auto path = resolve_data_path("configs/clusters/" + reference + ".json", "")) return *path;
  throw InputError("command line", "--cluster", reference,
                   "no such cluster file (give a path, or a shipped name such as dgx-h100)");
}

ClusterSpec load_cluster(const CollectiveOptions& options, std::string& path) {
  path = resolve_cluster_path(options.cluster);
  nlohmann::json document = load_json_file(path);
  for (const auto& assignment : options.overrides) apply_override(document, assignment);
  return parse_cluster_spec(JsonNode(document, path, ""));
}

CollectiveRequest make_request(const CollectiveOptions& options, const ClusterSpec& cluster) {
  CollectiveRequest request;
  const auto op = parse_op(options.op);
  if (!op) throw InputError("command line", "--op", options.op, "must be one of: " + op_names());
  request.op = *op;
  if (!options.algorithm.empty()) {
    request.algorithm = parse_algorithm(options.algorithm);
    if (!request.algorithm) {
      throw InputError("command line", "--algorithm", options.algorithm,
                       "must be one of: " + algorithm_names());
    }
  }
  if (!options.protocol.empty()) {
    request.protocol = parse_protocol(options.protocol);
    if (!request.protocol) {
      throw InputError("command line", "--protocol", options.protocol,
                       "must be one of: " + protocol_names());
    }
  }
  request.ranks = options.group.empty()
                      ? ranks_on_nodes(options.nodes, options.gpus_per_node, cluster.gpus_per_node)
                      : parse_group(options.group);
  return request;
}

nlohmann::json to_json(const CollectiveResult& result) {
  return {{"op", op_name(result.op)},
          {"bytes", static_cast<std::uint64_t>(result.bytes)},
          {"ranks", result.ranks},
          {"time_s", result.time.seconds()},
          {"algbw_GBps", result.algbw_GBps()},
          {"busbw_GBps", result.busbw_GBps()},
          {"algorithm", algorithm_name(result.algorithm)},
          {"protocol", protocol_name(result.protocol)}};
}

// Hosts the group touches (an NVLink domain may span several).
int nodes_touched(const Topology& topology, const std::vector<int>& ranks) {
  std::set<int> nodes;
  for (int rank : ranks) nodes.insert(topology.node_of(rank));
  return static_cast<int>(nodes.size());
}

void print_table(const std::vector<CollectiveResult>& results, const std::string& cluster,
                 const std::string& network, int nodes) {
  const auto& first = results.front();
  std::printf("# %s over %d ranks (%d node%s) on %s, network model %s\n", op_name(first.op),
              first.ranks, nodes, nodes == 1 ? "" : "s", cluster.c_str(), network.c_str());
  std::printf("# %12s  %-9s %-8s %12s %12s %12s\n", "size", "algorithm", "protocol", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)");
  for (const auto& result : results) {
    std::printf("  %12s  %-9s %-8s %12.2f %12.2f %12.2f\n", format_bytes(result.bytes).c_str(),
                algorithm_name(result.algorithm), protocol_name(result.protocol), result.time.us(),
                result.algbw_GBps(), result.busbw_GBps());
  }
}

int run(const CollectiveOptions& options) {
  if (options.group.empty() == (options.nodes == 0)) {
    throw InputError("command line", "--group/--nodes", "",
                     "give either --group RANKS or --nodes N (with --gpus-per-node K)");
  }
  const auto sizes = parse_byte_sizes(options.bytes, "--bytes");
  std::string cluster_path;
  const ClusterSpec cluster = load_cluster(options, cluster_path);
  const CollectiveRequest base = make_request(options, cluster);
  const Topology topology(cluster,
                          topology_gpu_count(base.ranks, cluster.gpus_per_node, options.num_gpus));
  const std::string profile_path =
      options.calibration.empty() ? shipped_profile_path(cluster.gpu) : options.calibration;
  const Profile profile = load_profile(profile_path);

  std::vector<CollectiveResult> results;
  for (auto size : sizes) {
    CollectiveRequest request = base;
    request.bytes = static_cast<double>(size);
    results.push_back(run_collective(options.network, topology, profile.comm, request));
  }
  if (options.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& result : results) out.push_back(to_json(result));
    std::cout << (results.size() == 1 ? out.front() : out).dump(2) << "\n";
  } else {
    print_table(results, cluster.name, options.network, nodes_touched(topology, base.ranks));
  }
  return 0;
}

}  // namespace

void add_collective_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<CollectiveOptions>();
  CLI::App* sub = app.add_subcommand(
      "collective", "Time one collective on a cluster and print algbw/busbw (nccl-tests style)");
  sub->add_option("--cluster", options->cluster, "Cluster file or shipped name (dgx-h100, ...)")
      ->required();
  sub->add_option("--op", options->op,
                  "all_reduce | all_gather | reduce_scatter | all_to_all | "
                  "send_recv")
      ->required();
  sub->add_option("--bytes", options->bytes,
                  "Buffer size S as nccl-tests counts it (256MiB), or a range 1KiB:8GiB")
      ->required();
  sub->add_option("--group", options->group, "Global ranks: 0-7, 0,8,16,24 or 0-3,8-11");
  sub->add_option("--nodes", options->nodes, "Use the first --gpus-per-node GPUs of N nodes")
      ->check(CLI::PositiveNumber);
  sub->add_option("--gpus-per-node", options->gpus_per_node,
                  "GPUs per node taking part (default: all)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--num-gpus", options->num_gpus,
                  "Size of the simulated cluster (default: the nodes the group touches)")
      ->check(CLI::PositiveNumber);
  sub->add_option(
      "--network", options->network, "Network model: " + [] {
        std::string names;
        for (const auto& n : network_model_names()) names += (names.empty() ? "" : " | ") + n;
        return names;
      }());
  sub->add_option("--algorithm", options->algorithm, "Force an algorithm (like NCCL_ALGO)");
  sub->add_option("--protocol", options->protocol, "Force a protocol: ll | ll128 | simple");
  sub->add_option("--calibration", options->calibration,
                  "Calibration profile (default: the cluster GPU's shipped profile)");
  sub->add_option("--set", options->overrides, "Override a cluster field: a.b=value");
  sub->add_flag("--json", options->json, "Print JSON on stdout");
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
