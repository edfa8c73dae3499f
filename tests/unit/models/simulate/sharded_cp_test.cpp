// ZeRO-3 (parallel.data_sharding "params") beside context parallelism: the CP positions reach
// the shared DP×CP group's parameter gathers and gradient reduce-scatters in different orders
// (their ring steps differ), and the step still matches each call with the same call of the
// other ranks.
#include <catch2/catch.hpp>

#include <string>

#include "models/run/simulate.hpp"

using namespace wallsim;
using namespace wallsim::models;

TEST_CASE("a ZeRO-3 step with a CP ring runs, symmetric within 1% of full fidelity",
          "[simulate][sharding][cp]") {
  const std::string example =
      std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/llama3-8b-16gpu-fsdp.json";
  for (const char* pp : {"1", "2"}) {
    INFO("pp " << pp);
    const std::vector<std::string> overrides{"parallel.cp=4", std::string("parallel.pp=") + pp,
                                             "model.layers=6"};
    auto full_overrides = overrides;
    full_overrides.push_back("simulation.fidelity=full");
    const RunSummary symmetric = simulate(load_run_config(example, overrides)).summary;
    const RunSummary full = simulate(load_run_config(example, full_overrides)).summary;
    CHECK(symmetric.iteration_time_s > 0);
    CHECK(symmetric.iteration_time_s == Approx(full.iteration_time_s).epsilon(0.01));
  }
}
