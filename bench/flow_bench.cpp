// Speed of the flow-level network model: 4,096 concurrent flows of permutation traffic over
// a 1,024-GPU DGX H100 fat tree, and the time to build a 16,384-GPU topology.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "sim/core/engine.hpp"
#include "sim/network/flow/flow_network.hpp"
#include "sim/network/topology/cluster_spec.hpp"
#include "sim/network/topology/topology.hpp"

namespace {

using wallsim::Time;

const wallsim::ClusterSpec& dgx_h100() {
  static const wallsim::ClusterSpec spec = wallsim::load_cluster_spec(
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/clusters/dgx-h100.json");
  return spec;
}

struct Transfer {
  wallsim::Route route;
  double bytes;
  Time start;
};

// `rounds` random permutations of the GPUs, each pair in different NVLink domains (so every
// flow crosses the fabric), 1-64 MiB each, started 10 ns apart: all flows overlap and every start
// and every end recomputes rates. Fixed seed: every run times the same work.
std::vector<Transfer> permutation_traffic(const wallsim::Topology& topology, int rounds) {
  std::mt19937_64 random(2024);
  const int gpus = topology.num_gpus();
  std::vector<Transfer> transfers;
  std::vector<int> destination(gpus);
  for (int round = 0; round < rounds; ++round) {
    for (int g = 0; g < gpus; ++g) destination[g] = g;
    std::shuffle(destination.begin(), destination.end(), random);
    for (int src = 0; src < gpus; ++src) {
      int dst = destination[src];
      while (topology.domain_of(dst) == topology.domain_of(src)) dst = int(random() % gpus);
      const double bytes = double(1 + random() % 64) * (1 << 20);
      const auto start = Time::from_ns(10.0 * double(transfers.size()));
      transfers.push_back(Transfer{topology.route(src, dst), bytes, start});
    }
  }
  return transfers;
}

void BM_flow_permutation_1024_gpus(benchmark::State& state) {
  const wallsim::Topology topology(dgx_h100(), 1024);
  const auto transfers = permutation_traffic(topology, /*rounds=*/4);  // 4,096 flows
  std::vector<double> capacity_Bps;
  for (const auto& link : topology.links()) capacity_Bps.push_back(link.capacity_Bps);

  std::uint64_t flows = 0, recomputations = 0;
  for (auto _ : state) {
    wallsim::Engine engine;
    wallsim::FlowNetwork network(engine, capacity_Bps);
    for (const Transfer& transfer : transfers) {
      engine.schedule_at(transfer.start, [&network, &transfer] {
        network.start(transfer.route, transfer.bytes, nullptr);
      });
    }
    engine.run();
    benchmark::DoNotOptimize(engine.now());
    flows += network.flows_started();
    recomputations += network.rate_recomputations();
  }
  state.counters["flows/s"] = benchmark::Counter(double(flows), benchmark::Counter::kIsRate);
  state.counters["recomputations/s"] =
      benchmark::Counter(double(recomputations), benchmark::Counter::kIsRate);
  state.counters["recomputations/flow"] = double(recomputations) / double(flows);
}
BENCHMARK(BM_flow_permutation_1024_gpus)->Unit(benchmark::kMillisecond);

void BM_build_topology(benchmark::State& state) {
  const int gpus = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const wallsim::Topology topology(dgx_h100(), gpus);
    benchmark::DoNotOptimize(topology.num_links());
  }
}
BENCHMARK(BM_build_topology)->Arg(1024)->Arg(16384)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
