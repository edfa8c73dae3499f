#include "models/run/simulate.hpp"

#include <algorithm>
#include <mutex>
#include <string>

#include "models/run/network_comm_service.hpp"
#include "models/run/report_data.hpp"
#include "models/run/summarize.hpp"
#include "models/run/variability.hpp"
#include "sim/core/parallel_for.hpp"
#include "sim/network/model/network_model.hpp"

namespace wallsim::models {
namespace {

// The simulated rank whose class holds global rank `gpu` (itself in full fidelity).
std::int64_t class_representative(const StepProgram& program, std::int64_t gpu) {
  for (std::size_t i = 0; i < program.global_rank.size(); ++i) {
    for (const int offset : program.class_offsets[i]) {
      if (program.global_rank[i] + offset == gpu) return program.global_rank[i];
    }
  }
  return gpu;
}

// Every link's effective capacity, with the run's degraded links scaled down. A NIC is scaled
// where it is: symmetric fidelity charges every inter-node collective and transfer on the
// links of the class's other members too, so the slow NIC holds back the flows of its class. A
// GPU's NVLink is scaled on the replayed member of its class: copies inside an NVLink domain are
// not charged (network_comm_service.cpp), and the class runs at its slowest member's pace, as
// with a straggler.
std::vector<double> link_capacities(const RunConfig& config, const Topology& topology,
                                    const CommProfile& comm, const StepProgram& program) {
  std::vector<double> capacities = effective_capacities(topology, comm);
  for (const DegradedLink& link : config.variability.degraded_links) {
    const auto ids = link.nvlink_rank ? topology.nvlink_links(static_cast<int>(
                                            class_representative(program, *link.nvlink_rank)))
                                      : topology.nic_links(static_cast<int>(*link.nic_node),
                                                           static_cast<int>(*link.nic_rail));
    for (const LinkId id : ids) capacities[id] *= link.bandwidth_factor;
  }
  return capacities;
}

// Replays `program` (sample `sample` of a varied run) and summarizes it; with `result` the
// replay and the communication report are kept there.
RunSummary replay_step(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                       const StepProgram& program, std::uint64_t sample, SimulationResult* result) {
  Engine engine;
  engine.set_event_budget(static_cast<std::uint64_t>(config.simulation.max_events));
  Topology topology(config.cluster, static_cast<int>(config.num_gpus));
  for (const auto& [node, rail] : config.variability.lost_nics) {
    topology.lose_nic(static_cast<int>(node), static_cast<int>(rail));
  }
  const std::vector<double> capacities = link_capacities(config, topology, comm, program);
  auto network = make_network_model(config.simulation.network, engine, capacities, config.file,
                                    "simulation.network");
  NetworkCommService network_comm(engine, topology, comm, *network, program);
  const VariabilitySpec& variability = config.variability;
  std::unique_ptr<VariedDurations> durations;
  std::unique_ptr<JitteredComm> jittered;
  CommService* service = &network_comm;
  if (variability.active()) {
    durations = std::make_unique<VariedDurations>(
        variability, program,
        rank_slowdowns(variability, program, config.cluster.gpus_per_node, sample), sample);
    jittered = std::make_unique<JitteredComm>(engine, network_comm, variability, sample);
    service = jittered.get();
  }
  Replay replay(engine, program.graphs, program.groups, *service, InvariantPolicy::kThrow,
                durations.get());
  ReplayResult replayed;
  try {
    replayed = replay.run();
  } catch (const EventBudgetExceeded& e) {
    throw EventBudgetExceeded(e.budget(), e.at(),
                              "simulation.max_events = " + std::to_string(e.budget()) + ": " +
                                  e.what() + "; raise it, or set 0 for no limit");
  }
  RunSummary summary = summarize(config, gpu, program, replayed);
  if (variability.active()) {
    summary.notes.push_back(
        "variability: sample " + std::to_string(sample) + " of seed " +
        std::to_string(variability.seed) +
        (config.simulation.fidelity == Fidelity::kSymmetric
             ? "; each of the " + std::to_string(program.graphs.size()) +
                   " replayed ranks runs at the pace of the slowest member of its class"
             : std::string()));
  }
  if (result) {
    add_communication_report(summary, config, program, topology, capacities, network->link_bytes());
    result->replay = std::move(replayed);
  }
  return summary;
}

// With stragglers: the same sample replayed without them, and what they cost.
void add_straggler_cost(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                        const StepProgram& program, std::uint64_t sample, RunSummary& summary) {
  if (config.variability.stragglers.empty()) return;
  RunConfig without = config;
  without.variability.stragglers.clear();
  const RunSummary baseline = replay_step(without, gpu, comm, program, sample, nullptr);
  summary.straggler_cost_s = summary.iteration_time_s - baseline.iteration_time_s;
  summary.straggler_free_time = baseline.time;
}

}  // namespace

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

SimulationResult simulate(const RunConfig& config, const GpuProfile& gpu, const CommProfile& comm,
                          std::uint64_t sample) {
  SimulationResult result;
  result.program = build_step(config, GpuModel(gpu), config.simulation.fidelity);
  result.summary = replay_step(config, gpu, comm, result.program, sample, &result);
  add_straggler_cost(config, gpu, comm, result.program, sample, result.summary);
  return result;
}

SimulationResult simulate_samples(const RunConfig& config, const GpuProfile& gpu,
                                  const CommProfile& comm, int samples, int jobs,
                                  const std::function<void(int)>& progress) {
  SimulationResult result;
  result.program = build_step(config, GpuModel(gpu), config.simulation.fidelity);
  for (const auto& graph : result.program.graphs) graph.prepare();  // before the threads read it
  std::vector<RunSummary> summaries(static_cast<std::size_t>(std::max(samples, 1)));
  std::mutex report;
  int done = 0;
  parallel_for(static_cast<std::int64_t>(summaries.size()), jobs, [&](std::int64_t i) {
    const auto sample = static_cast<std::size_t>(i);
    summaries[sample] = replay_step(config, gpu, comm, result.program, sample, nullptr);
    const std::lock_guard lock(report);
    ++done;
    if (progress) progress(done);
  });

  const StepDistribution distribution = distribution_of(summaries);
  const auto median = static_cast<std::uint64_t>(distribution.median_sample);
  result.summary = replay_step(config, gpu, comm, result.program, median, &result);
  add_straggler_cost(config, gpu, comm, result.program, median, result.summary);
  result.summary.distribution = distribution;
  return result;
}

}  // namespace wallsim::models
