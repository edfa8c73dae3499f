#include "models/run/simulate.hpp"

#include <string>

#include "models/run/network_comm_service.hpp"
#include "models/run/report_data.hpp"
#include "models/run/summarize.hpp"
#include "sim/network/model/network_model.hpp"

namespace wallsim::models {

Profile run_profile(const RunConfig& config) {
  if (config.calibration_inline) {
    return parse_profile(*config.calibration_inline, config.file, "calibration");
  }
  return load_profile(config.calibration_path.empty() ? shipped_profile_path(config.cluster.gpu)
                                                      : config.calibration_path);
}

SimulationResult simulate(const RunConfig& config) {
  const Profile profile = run_profile(config);
  return simulate(config, profile.gpu, profile.comm);
}

SimulationResult simulate(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm) {
  SimulationResult result;
  result.program = build_step(config, GpuModel(gpu), config.simulation.fidelity);

  Engine engine;
  engine.set_event_budget(static_cast<std::uint64_t>(config.simulation.max_events));
  const Topology topology(config.cluster, static_cast<int>(config.num_gpus));
  auto network =
      make_network_model(config.simulation.network, engine, effective_capacities(topology, comm),
                         config.file, "simulation.network");
  NetworkCommService service(engine, topology, comm, *network, result.program);
  Replay replay(engine, result.program.graphs, result.program.groups, service);
  try {
    result.replay = replay.run();
  } catch (const EventBudgetExceeded& e) {
    throw EventBudgetExceeded(e.budget(), e.at(),
                              "simulation.max_events = " + std::to_string(e.budget()) + ": " +
                                  e.what() + "; raise it, or set 0 for no limit");
  }
  result.summary = summarize(config, gpu, result.program, result.replay);
  add_communication_report(result.summary, config, result.program, topology,
                           effective_capacities(topology, comm), network->link_bytes());
  return result;
}

}  // namespace wallsim::models
