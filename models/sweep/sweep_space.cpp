#include "models/sweep/sweep_space.hpp"

#include <algorithm>
#include <sstream>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

template <typename T>
std::size_t pick(const std::vector<T>& values, std::int64_t& index) {
  const auto n = static_cast<std::int64_t>(values.size());
  const auto chosen = static_cast<std::size_t>(index % n);
  index /= n;
  return chosen;
}

[[noreturn]] void reject(const std::string& assignment, const std::string& problem) {
  throw InputError("command line", "--vary", assignment, problem);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, separator)) parts.push_back(part);
  return parts;
}

std::vector<std::int64_t> parse_sizes(const std::string& assignment,
                                      const std::vector<std::string>& values) {
  std::vector<std::int64_t> sizes;
  for (const auto& value : values) {
    std::size_t used = 0;
    long long parsed = 0;
    try {
      parsed = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || value.empty() || parsed < 1) {
      reject(assignment, "\"" + value + "\" is not a positive integer");
    }
    sizes.push_back(parsed);
  }
  return sizes;
}

std::vector<bool> parse_switches(const std::string& assignment,
                                 const std::vector<std::string>& values) {
  std::vector<bool> switches;
  for (const auto& value : values) {
    if (value == "on" || value == "true") {
      switches.push_back(true);
    } else if (value == "off" || value == "false") {
      switches.push_back(false);
    } else {
      reject(assignment, "\"" + value + "\" must be one of: on, off, true, false");
    }
  }
  return switches;
}

std::vector<MoeDispatcher> parse_dispatchers(const std::string& assignment,
                                             const std::vector<std::string>& values) {
  std::vector<MoeDispatcher> dispatchers;
  for (const auto& value : values) {
    const auto dispatcher = parse_moe_dispatcher(value);
    if (!dispatcher) {
      reject(assignment, "\"" + value + "\" must be one of: alltoall, allgather, flex");
    }
    dispatchers.push_back(*dispatcher);
  }
  return dispatchers;
}

std::vector<Recompute> parse_recompute(const std::string& assignment,
                                       const std::vector<std::string>& values) {
  std::vector<Recompute> choices;
  for (const auto& value : values) {
    bool found = false;
    for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
      if (value == to_string(r)) {
        choices.push_back(r);
        found = true;
      }
    }
    if (!found) reject(assignment, "\"" + value + "\" must be one of: none, selective, full");
  }
  return choices;
}

// "megatron" is Megatron's choice by vpp (stored as ""); anything else must be registered.
std::vector<std::string> parse_schedules(const std::string& assignment,
                                         const std::vector<std::string>& values) {
  std::vector<std::string> schedules;
  for (const auto& value : values) {
    if (value == "megatron") {
      schedules.emplace_back();
    } else if (find_pipeline_schedule(value)) {
      schedules.push_back(value);
    } else {
      std::string allowed = "megatron";
      for (const auto& name : pipeline_schedule_names()) allowed += ", " + name;
      reject(assignment, "\"" + value + "\" must be one of: " + allowed);
    }
  }
  return schedules;
}

std::vector<std::optional<DataSharding>> parse_shardings(const std::string& assignment,
                                                         const std::vector<std::string>& values) {
  std::vector<std::optional<DataSharding>> shardings;
  for (const auto& value : values) {
    const auto sharding = parse_data_sharding(value);
    if (!sharding)
      reject(assignment, "\"" + value + "\" must be one of: none, optimizer, grads, params");
    shardings.emplace_back(sharding);
  }
  return shardings;
}

std::vector<std::optional<SweepOffload>> parse_offloads(const std::string& assignment,
                                                        const std::vector<std::string>& values) {
  std::vector<std::optional<SweepOffload>> offloads;
  for (const auto& value : values) {
    const auto offload = parse_sweep_offload(value);
    if (!offload)
      reject(assignment, "\"" + value + "\" must be one of: none, activations, optimizer");
    offloads.emplace_back(offload);
  }
  return offloads;
}

std::vector<std::optional<CudaGraphs>> parse_graphs(const std::string& assignment,
                                                    const std::vector<std::string>& values) {
  std::vector<std::optional<CudaGraphs>> graphs;
  for (const auto& value : values) {
    const auto scope = parse_sweep_graphs(value);
    if (!scope)
      reject(assignment, "\"" + value + "\" must be one of: none, per_layer, full_iteration");
    graphs.emplace_back(scope);
  }
  return graphs;
}

template <typename T>
void keep_unique(std::vector<T>& values) {
  std::vector<T> unique;
  for (const T& value : values) {
    if (std::find(unique.begin(), unique.end(), value) == unique.end()) unique.push_back(value);
  }
  values = std::move(unique);
}

template <typename T>
std::string join(const std::vector<T>& values) {
  std::string text;
  for (const T& value : values) {
    if (!text.empty()) text += ",";
    if constexpr (std::is_same_v<T, bool>) {
      text += value ? "on" : "off";
    } else if constexpr (std::is_same_v<T, Recompute> || std::is_same_v<T, MoeDispatcher>) {
      text += to_string(value);
    } else if constexpr (std::is_same_v<T, std::string>) {
      text += value;
    } else if constexpr (std::is_same_v<T, std::optional<DataSharding>>) {
      text += value ? to_string(*value) : "by dist_opt";
    } else if constexpr (std::is_same_v<T, std::optional<SweepOffload>>) {
      text += value ? to_string(*value) : "config";
    } else if constexpr (std::is_same_v<T, std::optional<CudaGraphs>>) {
      text += value ? to_string(*value) : "config";
    } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
      text += value ? std::to_string(*value) : "config";
    } else {
      text += std::to_string(value);
    }
  }
  return text;
}

}  // namespace

const char* to_string(SweepOffload offload) {
  switch (offload) {
    case SweepOffload::kNone:
      return "none";
    case SweepOffload::kActivations:
      return "activations";
    case SweepOffload::kOptimizer:
      return "optimizer";
  }
  return "none";
}

std::optional<SweepOffload> parse_sweep_offload(const std::string& name) {
  for (SweepOffload o :
       {SweepOffload::kNone, SweepOffload::kActivations, SweepOffload::kOptimizer}) {
    if (name == to_string(o)) return o;
  }
  return std::nullopt;
}

std::optional<CudaGraphs> parse_sweep_graphs(const std::string& name) {
  for (CudaGraphs g : {CudaGraphs::kNone, CudaGraphs::kPerLayer, CudaGraphs::kFullIteration}) {
    if (name == to_string(g)) return g;
  }
  return std::nullopt;
}

std::string effective_schedule(const SweepPoint& p) {
  if (!p.schedule.empty()) return p.schedule;
  return p.vpp > 1 ? "interleaved" : "1f1b";
}

DataSharding effective_sharding(const SweepPoint& p) {
  if (p.sharding) return *p.sharding;
  return p.distributed_optimizer ? DataSharding::kOptimizer : DataSharding::kNone;
}

std::string point_id(const SweepPoint& p) {
  std::string id = "tp" + std::to_string(p.tp) + "-cp" + std::to_string(p.cp) + "-pp" +
                   std::to_string(p.pp) + "-vpp" + std::to_string(p.vpp);
  if (!p.schedule.empty()) id += "-" + p.schedule;
  if (p.ep > 1) id += "-ep" + std::to_string(p.ep);
  if (p.etp > 1) id += "-etp" + std::to_string(p.etp);
  if (p.dispatcher != MoeDispatcher::kAllToAll) id += std::string("-") + to_string(p.dispatcher);
  id += "-mb" + std::to_string(p.micro_batch) + "-" + to_string(p.recompute);
  if (p.tp > 1 && !p.sequence_parallel) id += "-nosp";
  if (p.sharding) {
    static constexpr const char* kNames[] = {"-ddp", "-zero1", "-zero2", "-fsdp"};
    id += kNames[static_cast<int>(*p.sharding)];
  } else if (!p.distributed_optimizer) {
    id += "-nodo";
  }
  if (!p.overlap) id += "-noov";
  if (p.offload) {
    static constexpr const char* kNames[] = {"-nooffload", "-offload-act", "-offload-opt"};
    id += kNames[static_cast<int>(*p.offload)];
  }
  if (p.cuda_graphs) {
    static constexpr const char* kNames[] = {"-eager", "-graphs", "-fullgraph"};
    id += kNames[static_cast<int>(*p.cuda_graphs)];
  }
  if (p.placement) id += "-place" + std::to_string(*p.placement);
  return id;
}

std::int64_t SweepSpace::size() const {
  return static_cast<std::int64_t>(tp.size() * sequence_parallel.size() * cp.size() * pp.size() *
                                   vpp.size() * schedule.size() * ep.size() * etp.size() *
                                   dispatcher.size() * micro_batch.size() * recompute.size() *
                                   distributed_optimizer.size() * sharding.size() * overlap.size() *
                                   offload.size() * graphs.size() * placement.size());
}

SweepPoint SweepSpace::at(std::int64_t index) const {
  // Mixed radix, the last knob varying fastest.
  SweepPoint p;
  p.placement = placement[pick(placement, index)];
  p.cuda_graphs = graphs[pick(graphs, index)];
  p.offload = offload[pick(offload, index)];
  p.overlap = overlap[pick(overlap, index)];
  p.sharding = sharding[pick(sharding, index)];
  p.distributed_optimizer = distributed_optimizer[pick(distributed_optimizer, index)];
  if (p.sharding) p.distributed_optimizer = *p.sharding != DataSharding::kNone;
  p.recompute = recompute[pick(recompute, index)];
  p.micro_batch = micro_batch[pick(micro_batch, index)];
  p.dispatcher = dispatcher[pick(dispatcher, index)];
  p.etp = etp[pick(etp, index)];
  p.ep = ep[pick(ep, index)];
  p.schedule = schedule[pick(schedule, index)];
  p.vpp = vpp[pick(vpp, index)];
  p.pp = pp[pick(pp, index)];
  p.cp = cp[pick(cp, index)];
  p.sequence_parallel = sequence_parallel[pick(sequence_parallel, index)];
  p.tp = tp[pick(tp, index)];
  return p;
}

std::int64_t SweepSpace::with_recompute(std::int64_t index, std::size_t position) const {
  // The knobs at() picks before recompute vary faster.
  const auto stride =
      static_cast<std::int64_t>(placement.size() * graphs.size() * offload.size() * overlap.size() *
                                sharding.size() * distributed_optimizer.size());
  const auto count = static_cast<std::int64_t>(recompute.size());
  const std::int64_t digit = (index / stride) % count;
  return index + (static_cast<std::int64_t>(position) - digit) * stride;
}

bool sweeps_experts(const SweepSpace& space) {
  return space.ep != std::vector<std::int64_t>{1} || space.etp != std::vector<std::int64_t>{1} ||
         space.dispatcher != std::vector<MoeDispatcher>{MoeDispatcher::kAllToAll};
}

const std::vector<std::string>& sweep_knob_names() {
  static const std::vector<std::string> kNames{
      "tp",       "sp",      "cp",         "pp",     "vpp",       "schedule",
      "ep",       "etp",     "dispatcher", "mb",     "recompute", "dist_opt",
      "sharding", "overlap", "offload",    "graphs", "placement"};
  return kNames;
}

// Below 16K tokens per sequence a CP split only shortens GEMMs that TP already splits; from 16K
// on attention's s² work makes CP worth trying (mechanics.md §3.2: CP scales compute and
// communication by 1/cp and avoids full recompute).
constexpr std::int64_t kContextParallelFromTokens = 16384;

SweepSpace default_space(const SpaceShape& shape) {
  SweepSpace space;
  space.tp.clear();
  for (std::int64_t tp : {1, 2, 4, 8}) {
    if (tp <= shape.gpus_per_domain && shape.num_gpus % tp == 0) space.tp.push_back(tp);
  }
  if (space.tp.empty()) space.tp.push_back(1);
  space.pp.clear();
  for (std::int64_t pp = 1; pp <= std::min(shape.num_gpus, shape.layers); ++pp) {
    if (shape.num_gpus % pp == 0) space.pp.push_back(pp);
  }
  for (std::int64_t v = 2; v <= shape.layers; ++v) {
    const bool fits = std::any_of(space.pp.begin(), space.pp.end(), [&](std::int64_t pp) {
      return pp > 1 && shape.layers % (pp * v) == 0;
    });
    if (fits) space.vpp.push_back(v);
  }
  if (shape.seq_len >= kContextParallelFromTokens) {
    space.cp.clear();
    for (std::int64_t cp : {1, 2, 4, 8}) {
      if (shape.num_gpus % cp == 0) space.cp.push_back(cp);
    }
  }
  if (shape.experts > 0) {
    space.ep.clear();
    for (std::int64_t ep = 1; ep <= 64; ep *= 2) {
      if (shape.experts % ep == 0 && shape.num_gpus % ep == 0) space.ep.push_back(ep);
    }
    space.etp = space.tp;
    space.dispatcher = {MoeDispatcher::kAllToAll, MoeDispatcher::kAllGather};
  }
  space.micro_batch = {1, 2, 4};
  space.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  return space;
}

namespace {

// "tp, sp, cp, ..." for error messages.
std::string knob_list() {
  std::string text;
  for (const auto& name : sweep_knob_names()) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

// dist_opt and sharding both decide whether optimizer state is sharded: one of them varies.
void vary_optimizer_sharding(SweepSpace& space, const std::string& assignment,
                             const std::string& knob, const std::vector<std::string>& values) {
  const bool sharding_stated =
      space.sharding != std::vector<std::optional<DataSharding>>{std::nullopt};
  if (knob == "dist_opt") {
    if (sharding_stated) {
      reject(assignment,
             "data sharding is already chosen (--vary sharding or the config's "
             "parallel.data_sharding), which decides the distributed optimizer");
    }
    space.distributed_optimizer = parse_switches(assignment, values);
    return;
  }
  if (space.distributed_optimizer.size() > 1) {
    reject(assignment,
           "vary either dist_opt or sharding: sharding decides the distributed "
           "optimizer (\"none\" is without it)");
  }
  space.sharding = parse_shardings(assignment, values);
  space.distributed_optimizer = {true};
}

void apply_vary(SweepSpace& space, const std::string& assignment) {
  const auto equals = assignment.find('=');
  if (equals == std::string::npos || equals + 1 == assignment.size()) {
    reject(assignment, "must be knob=v1,v2,... (knobs: " + knob_list() + ")");
  }
  const std::string knob = assignment.substr(0, equals);
  const auto values = split(assignment.substr(equals + 1), ',');
  if (knob == "tp")
    space.tp = parse_sizes(assignment, values);
  else if (knob == "cp")
    space.cp = parse_sizes(assignment, values);
  else if (knob == "pp")
    space.pp = parse_sizes(assignment, values);
  else if (knob == "vpp")
    space.vpp = parse_sizes(assignment, values);
  else if (knob == "mb" || knob == "micro_batch")
    space.micro_batch = parse_sizes(assignment, values);
  else if (knob == "recompute")
    space.recompute = parse_recompute(assignment, values);
  else if (knob == "sp")
    space.sequence_parallel = parse_switches(assignment, values);
  else if (knob == "dist_opt" || knob == "sharding")
    vary_optimizer_sharding(space, assignment, knob, values);
  else if (knob == "overlap")
    space.overlap = parse_switches(assignment, values);
  else if (knob == "ep")
    space.ep = parse_sizes(assignment, values);
  else if (knob == "etp")
    space.etp = parse_sizes(assignment, values);
  else if (knob == "dispatcher")
    space.dispatcher = parse_dispatchers(assignment, values);
  else if (knob == "schedule")
    space.schedule = parse_schedules(assignment, values);
  else if (knob == "offload")
    space.offload = parse_offloads(assignment, values);
  else if (knob == "graphs")
    space.graphs = parse_graphs(assignment, values);
  else if (knob == "placement") {
    space.placement.clear();
    for (const std::int64_t gpus : parse_sizes(assignment, values)) space.placement.push_back(gpus);
  } else {
    reject(assignment, "unknown knob \"" + knob + "\"; valid knobs: " + knob_list());
  }
  keep_unique(space.tp);
  keep_unique(space.cp);
  keep_unique(space.pp);
  keep_unique(space.vpp);
  keep_unique(space.ep);
  keep_unique(space.etp);
  keep_unique(space.dispatcher);
  keep_unique(space.schedule);
  keep_unique(space.micro_batch);
  keep_unique(space.recompute);
  keep_unique(space.sequence_parallel);
  keep_unique(space.distributed_optimizer);
  keep_unique(space.sharding);
  keep_unique(space.overlap);
  keep_unique(space.offload);
  keep_unique(space.graphs);
  keep_unique(space.placement);
}

std::vector<std::pair<std::string, std::string>> describe_space(const SweepSpace& s) {
  std::vector<std::pair<std::string, std::string>> knobs{{"tp", join(s.tp)},
                                                         {"sp", join(s.sequence_parallel)},
                                                         {"cp", join(s.cp)},
                                                         {"pp", join(s.pp)},
                                                         {"vpp", join(s.vpp)}};
  if (s.schedule != std::vector<std::string>{""}) {
    std::string names;
    for (const auto& name : s.schedule) {
      names += (names.empty() ? "" : ",") + (name.empty() ? std::string("megatron") : name);
    }
    knobs.emplace_back("schedule", names);
  }
  if (sweeps_experts(s)) {
    knobs.emplace_back("ep", join(s.ep));
    knobs.emplace_back("etp", join(s.etp));
    knobs.emplace_back("dispatcher", join(s.dispatcher));
  }
  knobs.emplace_back("mb", join(s.micro_batch));
  knobs.emplace_back("recompute", join(s.recompute));
  if (s.sharding != std::vector<std::optional<DataSharding>>{std::nullopt}) {
    knobs.emplace_back("sharding", join(s.sharding));
  } else {
    knobs.emplace_back("dist_opt", join(s.distributed_optimizer));
  }
  knobs.emplace_back("overlap", join(s.overlap));
  if (s.offload != std::vector<std::optional<SweepOffload>>{std::nullopt}) {
    knobs.emplace_back("offload", join(s.offload));
  }
  if (s.graphs != std::vector<std::optional<CudaGraphs>>{std::nullopt}) {
    knobs.emplace_back("graphs", join(s.graphs));
  }
  if (s.placement != std::vector<std::optional<std::int64_t>>{std::nullopt}) {
    knobs.emplace_back("placement", join(s.placement));
  }
  return knobs;
}

}  // namespace wallsim::models
