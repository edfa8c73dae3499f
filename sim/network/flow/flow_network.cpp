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
// a recomputation does not reschedule a completion for nothing.
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
  std::optional<Time> due;  // when the last byte arrives at the current rate
  std::uint64_t due_version = 0;  // which queue entry is this flow's current one
  FlowNetwork::Done done;
  std::uint64_t visit = 0;
};

// A completion waiting in the queue; stale once its flow ended or was rescheduled.
struct Due {
  Time at;
  FlowId id;
  std::uint64_t version;
  std::uint32_t slot;
};

// std heaps are max-heaps; "later" entries sink, so the top is the earliest (time, then id).
bool later(const Due& a, const Due& b) {
  return a.at != b.at ? a.at > b.at : a.id > b.id;
}

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
  std::uint64_t solved = 0;
  std::uint64_t visit_stamp = 0;

  // Changes waiting for the settle of this instant.
  std::vector<std::uint32_t> dirty_links;
  std::optional<Time> settle_at;  // a settle event is queued for this time
  std::optional<EventId> settle_event;

  // Completion queue (min-heap of Due) and the one engine event that wakes the network.
  std::vector<Due> dues;
  std::size_t live_dues = 0;
  std::optional<EventId> wakeup;
  Time wakeup_at;

  // Scratch reused by every recomputation and batch.
  std::vector<std::uint32_t> component_links, component_flows, local_path;
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
  void mark_dirty(std::uint32_t slot);
  void request_settle();
  void settle();
  void collect_component();
  void build_problem();
  void apply_rate(std::uint32_t slot, double rate_Bps);
  bool is_live(const Due& entry) const;
  void push_due(std::uint32_t slot);
  void drop_stale_dues();
  void arm_wakeup();
  void wake();
  void finish(std::uint32_t slot);
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

void FlowNetwork::State::mark_dirty(std::uint32_t slot) {
  const auto& path = flows[slot].links;
  dirty_links.insert(dirty_links.end(), path.begin(), path.end());
  request_settle();
}

void FlowNetwork::State::request_settle() {
  const Time now = engine.now();
  if (settle_at == now) return;
  settle_at = now;
  settle_event = engine.schedule_late(now, [this] {
    settle_at.reset();
    settle_event.reset();
    settle();
  });
}

// Breadth-first search over link -> flows -> links from the dirty links: the flows whose rates
// can depend on what changed. Flows are sorted by id so the solver sees them in an order that
// does not depend on how crossings were added and removed; links stay in BFS order, which
// follows from the flow order and the seeds.
void FlowNetwork::State::collect_component() {
  ++visit_stamp;
  component_links.clear();
  component_flows.clear();
  for (std::uint32_t link : dirty_links) {
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

// The one solve of this instant, over every component that a start or an end touched.
void FlowNetwork::State::settle() {
  if (dirty_links.empty()) return;
  collect_component();
  dirty_links.clear();
  if (component_flows.empty()) return;
  build_problem();
  solver.solve(problem, rates_Bps);
  ++solved;
  recomputed += component_flows.size();
  for (std::size_t i = 0; i < component_flows.size(); ++i) {
    apply_rate(component_flows[i], rates_Bps[i]);
  }
  arm_wakeup();
}

// Bytes are brought up to date lazily, only when the rate they were sent at changes.
void FlowNetwork::State::apply_rate(std::uint32_t slot, double rate_Bps) {
  FlowState& flow = flows[slot];
  const bool unchanged = std::abs(rate_Bps - flow.rate_Bps) <= kRateChangeTolerance * flow.rate_Bps;
  if (unchanged && flow.due) return;
  const Time now = engine.now();
  const double sent = flow.rate_Bps * (now - flow.updated_at).seconds();
  flow.remaining_bytes = std::max(0.0, flow.remaining_bytes - sent);
  flow.updated_at = now;
  flow.rate_Bps = rate_Bps;
  if (flow.due) --live_dues;
  flow.due.reset();
  // A zero rate (only possible through rounding on a saturated link) leaves the flow waiting
  // for the next recomputation instead of being due at the end of time.
  if (rate_Bps > 0) push_due(slot);
}

bool FlowNetwork::State::is_live(const Due& entry) const {
  const FlowState& flow = flows[entry.slot];
  return flow.active && flow.id == entry.id && flow.due_version == entry.version;
}

void FlowNetwork::State::push_due(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  flow.due = engine.now() + Time::from_seconds(flow.remaining_bytes / flow.rate_Bps);
  dues.push_back(Due{*flow.due, flow.id, ++flow.due_version, slot});
  std::push_heap(dues.begin(), dues.end(), later);
  ++live_dues;
}

// Entries go stale when a flow is rescheduled; the heap is rebuilt from the live ones when
// stale entries outnumber them, so it stays within twice the active flows.
void FlowNetwork::State::drop_stale_dues() {
  if (dues.size() > 2 * live_dues + 64) {
    std::erase_if(dues, [this](const Due& entry) { return !is_live(entry); });
    std::make_heap(dues.begin(), dues.end(), later);
  }
  while (!dues.empty() && !is_live(dues.front())) {
    std::pop_heap(dues.begin(), dues.end(), later);
    dues.pop_back();
  }
}

// Keeps exactly one wakeup event queued, at the earliest live due time.
void FlowNetwork::State::arm_wakeup() {
  drop_stale_dues();
  if (dues.empty()) {
    if (wakeup) engine.cancel(*wakeup);
    wakeup.reset();
    return;
  }
  const Time at = dues.front().at;
  if (wakeup && wakeup_at == at) return;
  if (wakeup) engine.cancel(*wakeup);
  wakeup_at = at;
  wakeup = engine.schedule_at(at, [this] {
    wakeup.reset();
    wake();
  });
}

// Ends every flow due within the tolerance of now, then runs their callbacks in order.
void FlowNetwork::State::wake() {
  const Time horizon = engine.now() + kCompletionTolerance;
  std::vector<Done> callbacks;
  for (drop_stale_dues(); !dues.empty() && dues.front().at <= horizon; drop_stale_dues()) {
    const std::uint32_t slot = dues.front().slot;
    finish(slot);
    callbacks.push_back(std::move(flows[slot].done));
    flows[slot].done = nullptr;
  }
  arm_wakeup();
  for (Done& done : callbacks) {
    if (done) done();
  }
}

// The flow leaves its links, which are marked for this instant's settle.
void FlowNetwork::State::finish(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  if (flow.due) --live_dues;
  flow.due.reset();
  detach(slot);
  mark_dirty(slot);
  flow.active = false;
  slot_of.erase(flow.id);
  free_slots.push_back(slot);
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

// Pending wakeup and settle events point at this object; they must not outlive it.
FlowNetwork::~FlowNetwork() {
  if (state_->wakeup) state_->engine.cancel(*state_->wakeup);
  if (state_->settle_event) state_->engine.cancel(*state_->settle_event);
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
  flow.due.reset();
  flow.done = std::move(done);
  s.slot_of.emplace(id, slot);
  s.attach(slot);
  s.mark_dirty(slot);
  return id;
}

// Queries settle what this instant changed so far; the settle event then finds nothing left.
double FlowNetwork::rate(FlowId id) const {
  state_->settle();
  const FlowState* flow = state_->find(id);
  return flow ? flow->rate_Bps : 0.0;  // an inactive (finished or unknown) flow has rate 0
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
  state_->settle();
  return state_->recomputed;
}

std::uint64_t FlowNetwork::solves() const {
  state_->settle();
  return state_->solved;
}

}  // namespace wallsim
