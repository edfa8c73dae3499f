#include "sim/network/flow/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "sim/network/flow/max_min_solver.hpp"

namespace wallsim {
namespace {

// A rate that moved by less than this fraction is treated as unchanged, so rounding noise in
// a recomputation does not cancel and reschedule completion events for nothing.
constexpr double kRateChangeTolerance = 1e-12;

// One flow on one link: which flow, and which hop of that flow's path this link is.
struct Crossing {
  std::uint32_t flow_slot;
  std::uint32_t hop;
};

struct LinkState {
  double capacity_Bps = 0;
  std::vector<Crossing> crossings;  // unordered; removal swaps with the last entry
  std::uint64_t visit = 0;          // BFS stamp
  std::uint32_t local = 0;          // index in the current MaxMinProblem
};

struct FlowState {
  FlowId id = 0;
  bool active = false;
  std::vector<std::uint32_t> links;
  std::vector<std::uint32_t> position;  // position[k]: index of this flow in links[k]'s crossings
  double remaining_bytes = 0;           // as of updated_at
  double rate_Bps = 0;                  // per member
  double multiplicity = 1;
  double cap_Bps = 0;
  Time updated_at;
  std::optional<EventId> completion;
  FlowNetwork::Done done;
  std::uint64_t visit = 0;
};

}  // namespace

struct FlowNetwork::State {
  explicit State(Engine& e) : engine(e) {}

  Engine& engine;
  std::vector<LinkState> links;
  std::vector<FlowState> flows;  // slots; a finished flow's slot is reused
  std::vector<std::uint32_t> free_slots;
  std::unordered_map<FlowId, std::uint32_t> slot_of;  // lookup only, never iterated
  FlowId next_id = 0;
  std::uint64_t started = 0;
  std::uint64_t recomputed = 0;
  std::uint64_t visit_stamp = 0;

  // Scratch reused by every recomputation.
  std::vector<std::uint32_t> component_links, component_flows, seeds, local_path;
  MaxMinProblem problem;
  MaxMinSolver solver;
  std::vector<double> rates_Bps;

  const FlowState* find(FlowId id) const {
    const auto it = slot_of.find(id);
    return it == slot_of.end() ? nullptr : &flows[it->second];
  }
  std::uint32_t allocate_slot();
  void attach(std::uint32_t slot);
  void detach(std::uint32_t slot);
  void collect_component(std::span<const std::uint32_t> seed_links);
  void build_problem();
  void recompute(std::span<const std::uint32_t> seed_links);
  void apply_rate(std::uint32_t slot, double rate_Bps);
  void schedule_completion(std::uint32_t slot);
  void complete(std::uint32_t slot);
};

std::uint32_t FlowNetwork::State::allocate_slot() {
  if (!free_slots.empty()) {
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  }
  flows.emplace_back();
  return static_cast<std::uint32_t>(flows.size() - 1);
}

void FlowNetwork::State::attach(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  flow.position.resize(flow.links.size());
  for (std::uint32_t k = 0; k < flow.links.size(); ++k) {
    auto& crossings = links[flow.links[k]].crossings;
    flow.position[k] = static_cast<std::uint32_t>(crossings.size());
    crossings.push_back(Crossing{slot, k});
  }
}

// O(1) per link: the last crossing takes the removed one's place.
void FlowNetwork::State::detach(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  for (std::uint32_t k = 0; k < flow.links.size(); ++k) {
    auto& crossings = links[flow.links[k]].crossings;
    const std::uint32_t pos = flow.position[k];
    const Crossing moved = crossings.back();
    crossings[pos] = moved;
    flows[moved.flow_slot].position[moved.hop] = pos;
    crossings.pop_back();
  }
}

// Breadth-first search over link -> flows -> links from the seeds: the flows whose rates can
// depend on what changed. Flows are sorted by id so the solver sees them in an order that does
// not depend on how crossings were added and removed; links stay in BFS order, which follows
// from the flow order and the seeds (sorting them too cost 12% of the benchmark).
void FlowNetwork::State::collect_component(std::span<const std::uint32_t> seed_links) {
  ++visit_stamp;
  component_links.clear();
  component_flows.clear();
  for (std::uint32_t link : seed_links) {
    if (links[link].visit == visit_stamp) continue;
    links[link].visit = visit_stamp;
    component_links.push_back(link);
  }
  for (std::size_t next = 0; next < component_links.size(); ++next) {
    for (const Crossing& crossing : links[component_links[next]].crossings) {
      FlowState& flow = flows[crossing.flow_slot];
      if (flow.visit == visit_stamp) continue;
      flow.visit = visit_stamp;
      component_flows.push_back(crossing.flow_slot);
      for (std::uint32_t link : flow.links) {
        if (links[link].visit == visit_stamp) continue;
        links[link].visit = visit_stamp;
        component_links.push_back(link);
      }
    }
  }
  std::sort(component_flows.begin(), component_flows.end(),
            [this](std::uint32_t a, std::uint32_t b) { return flows[a].id < flows[b].id; });
}

void FlowNetwork::State::build_problem() {
  problem.clear();
  for (std::uint32_t link : component_links) {
    links[link].local = problem.add_link(links[link].capacity_Bps);
  }
  for (std::uint32_t slot : component_flows) {
    const FlowState& flow = flows[slot];
    local_path.clear();
    for (std::uint32_t link : flow.links) local_path.push_back(links[link].local);
    problem.add_flow(local_path, flow.multiplicity, flow.cap_Bps);
  }
}

void FlowNetwork::State::recompute(std::span<const std::uint32_t> seed_links) {
  collect_component(seed_links);
  if (component_flows.empty()) return;
  build_problem();
  solver.solve(problem, rates_Bps);
  recomputed += component_flows.size();
  for (std::size_t i = 0; i < component_flows.size(); ++i) {
    apply_rate(component_flows[i], rates_Bps[i]);
  }
}

// Bytes are brought up to date lazily, only when the rate they were sent at changes.
void FlowNetwork::State::apply_rate(std::uint32_t slot, double rate_Bps) {
  FlowState& flow = flows[slot];
  const bool unchanged = std::abs(rate_Bps - flow.rate_Bps) <= kRateChangeTolerance * flow.rate_Bps;
  if (unchanged && flow.completion) return;
  const Time now = engine.now();
  const double sent = flow.rate_Bps * (now - flow.updated_at).seconds();
  flow.remaining_bytes = std::max(0.0, flow.remaining_bytes - sent);
  flow.updated_at = now;
  flow.rate_Bps = rate_Bps;
  if (flow.completion) engine.cancel(*flow.completion);
  flow.completion.reset();
  schedule_completion(slot);
}

void FlowNetwork::State::schedule_completion(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  // A zero rate (only possible through rounding on a saturated link) leaves the flow waiting
  // for the next recomputation instead of scheduling an event at the end of time.
  if (!(flow.rate_Bps > 0)) return;
  const Time eta = Time::from_seconds(flow.remaining_bytes / flow.rate_Bps);
  const FlowId id = flow.id;
  flow.completion = engine.schedule_at(engine.now() + eta, [this, slot, id] {
    if (flows[slot].id == id && flows[slot].active) complete(slot);
  });
}

// The flow leaves its links, the flows it shared them with get their new rates, and only
// then its callback runs, so anything the callback starts sees a settled network.
void FlowNetwork::State::complete(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  flow.completion.reset();
  detach(slot);
  seeds.assign(flow.links.begin(), flow.links.end());
  Done done = std::move(flow.done);
  flow.active = false;
  flow.done = nullptr;
  slot_of.erase(flow.id);
  free_slots.push_back(slot);
  recompute(seeds);
  if (done) done();
}

FlowNetwork::FlowNetwork(Engine& engine, std::vector<double> link_capacity_Bps)
    : state_(std::make_unique<State>(engine)) {
  state_->links.resize(link_capacity_Bps.size());
  for (std::size_t l = 0; l < link_capacity_Bps.size(); ++l) {
    const double capacity = link_capacity_Bps[l];
    if (!(capacity > 0) || !std::isfinite(capacity)) {
      throw std::invalid_argument("FlowNetwork: link " + std::to_string(l) +
                                  " needs a finite capacity > 0, got " + std::to_string(capacity));
    }
    state_->links[l].capacity_Bps = capacity;
  }
}

// Pending completion events point at this object; they must not outlive it.
FlowNetwork::~FlowNetwork() {
  for (const FlowState& flow : state_->flows) {
    if (flow.active && flow.completion) state_->engine.cancel(*flow.completion);
  }
}

FlowId FlowNetwork::start(std::span<const std::uint32_t> links, double bytes, Done done,
                          double multiplicity, double rate_cap_Bps) {
  if (!(bytes >= 0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("FlowNetwork::start: bytes must be finite and >= 0");
  }
  if (!(multiplicity > 0) || !std::isfinite(multiplicity) || !(rate_cap_Bps > 0)) {
    throw std::invalid_argument("FlowNetwork::start: multiplicity and rate cap must be > 0");
  }
  for (std::uint32_t link : links) {
    if (link >= state_->links.size()) {
      throw std::out_of_range("FlowNetwork::start: no link " + std::to_string(link));
    }
  }
  State& s = *state_;
  const FlowId id = s.next_id++;
  ++s.started;
  if (links.empty() || bytes == 0) {
    s.engine.schedule_at(s.engine.now(), [done = std::move(done)] {
      if (done) done();
    });
    return id;
  }
  const std::uint32_t slot = s.allocate_slot();
  FlowState& flow = s.flows[slot];
  flow.id = id;
  flow.active = true;
  flow.links.assign(links.begin(), links.end());
  flow.remaining_bytes = bytes;
  flow.rate_Bps = 0;
  flow.multiplicity = multiplicity;
  flow.cap_Bps = rate_cap_Bps;
  flow.updated_at = s.engine.now();
  flow.completion.reset();
  flow.done = std::move(done);
  s.slot_of.emplace(id, slot);
  s.attach(slot);
  s.recompute(s.flows[slot].links);
  return id;
}

// An inactive (finished or unknown) flow has rate 0.
double FlowNetwork::rate(FlowId id) const {
  const FlowState* flow = state_->find(id);
  return flow ? flow->rate_Bps : 0.0;
}

bool FlowNetwork::active(FlowId id) const {
  return state_->find(id) != nullptr;
}

std::size_t FlowNetwork::active_flows() const {
  return state_->slot_of.size();
}

std::uint64_t FlowNetwork::flows_started() const {
  return state_->started;
}

std::uint64_t FlowNetwork::rate_recomputations() const {
  return state_->recomputed;
}

}  // namespace wallsim
