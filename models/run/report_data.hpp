// What the reports need from a simulation beyond RunSummary's core: exposed communication by
// group and tier, link usage from the network's byte counters, rank names and the trace
// adapter (sim/report/trace_input.hpp) over a chosen set of ranks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/run/simulate.hpp"
#include "sim/network/topology/topology.hpp"
#include "sim/report/trace_input.hpp"

namespace wallsim::models {

inline constexpr std::size_t kBusiestLinks = 10;

// Fills summary.exposure_by_group (groups the critical rank communicates on; tier "network"
// when any of its ops of that group crosses NVLink domains), link_tiers and busiest_links
// (busy_s = bytes / effective capacity; utilization = busy_s / step). In symmetric fidelity
// only the simulated ranks' collectives are counted on the links.
void add_communication_report(RunSummary& summary, const RunConfig& config,
                              const StepProgram& program, const Topology& topology,
                              const std::vector<double>& capacity_Bps,
                              const std::vector<double>& link_bytes);

// "pp2 tp0 cp0 dp0" ("... ep1" when ep > 1): a global rank by its coordinates.
std::string rank_name(const RunConfig& config, std::int64_t global_rank);

// The first simulated rank of every pipeline stage.
std::vector<RankIndex> representative_ranks(const StepProgram& program);

// Ranks for trace.json. `spec`: "" (default: representative ranks in symmetric fidelity,
// every simulated rank up to `full_limit` in full), "all", or a list of global ranks and ranges
// ("0,8-15"). Throws InputError for a rank that is not simulated or a malformed list.
std::vector<RankIndex> select_trace_ranks(const StepProgram& program, const std::string& spec,
                                          bool full_fidelity, std::size_t full_limit = 64);

// The same checks on `spec` before anything is simulated: a malformed list, a rank past
// num_gpus or one the run's fidelity does not simulate throw InputError.
void check_trace_ranks(const RunConfig& config, const std::string& spec);

// The adapter the trace and timeline writers read; `result` must outlive it.
TraceInput trace_input(const RunConfig& config, const SimulationResult& result,
                       const std::vector<RankIndex>& ranks);

}  // namespace wallsim::models
