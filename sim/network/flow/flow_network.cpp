#include "sim/network/flow/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "sim/network/flow/flow_network_state.hpp"

namespace wallsim {

using namespace flow_internal;  // this file implements what flow_network_state.hpp declares

std::uint32_t FlowNetwork::State::allocate_slot() {
  if (!free_slots.empty()) {
    const std::uint32_t slot = free_slots.back();
    free_slots.pop_back();
    return slot;
  }
  flows.emplace_back();
  flow_visit.push_back(0);
  return static_cast<std::uint32_t>(flows.size() - 1);
}

// A flow on `shape`'s links, attached and registered; its rate waits for the next settle.
std::uint32_t FlowNetwork::State::new_flow(Shape shape, double bytes, double multiplicity,
                                           double cap_Bps) {
  const std::uint32_t slot = allocate_slot();
  FlowState& flow = flows[slot];
  flow.id = next_id++;
  flow.active = true;
  flow.shape = std::move(shape);
  flow.witness.clear();
  flow.bottleneck_hop = kNoIndex;
  flow.remaining_bytes = bytes;
  flow.rate_Bps = 0;
  flow.multiplicity = multiplicity;
  flow.cap_Bps = cap_Bps;
  flow.updated_at = engine.now();
  flow.due.reset();
  flow.done = nullptr;
  flow.group_done = nullptr;
  slot_of.emplace(flow.id, slot);
  attach(slot);
  return slot;
}

// Checks the links and compresses them (see FlowShape).
FlowNetwork::Shape FlowNetwork::State::make_shape(std::span<const std::uint32_t> route_links,
                                                  std::span<const std::uint32_t> member_begin) {
  if (member_begin.size() < 2 || member_begin.front() != 0 ||
      member_begin.back() != route_links.size() ||
      !std::is_sorted(member_begin.begin(), member_begin.end())) {
    throw std::invalid_argument(
        "FlowNetwork: member_begin must rise from 0 to the number of "
        "links, with at least one member");
  }
  if (!route_links.empty() &&
      *std::max_element(route_links.begin(), route_links.end()) >= links.size()) {
    throw std::out_of_range(
        "FlowNetwork::start: no link " +
        std::to_string(*std::max_element(route_links.begin(), route_links.end())));
  }
  auto shape = std::make_shared<FlowShape>();
  shape->member_links.assign(route_links.begin(), route_links.end());
  shape->member_begin.assign(member_begin.begin(), member_begin.end());
  shape->member_entry.reserve(route_links.size());
  for (std::uint32_t link : route_links) {
    if (compress_index[link] == kNoIndex) {
      compress_index[link] = static_cast<std::uint32_t>(shape->links.size());
      shape->links.push_back(link);
      shape->crossings.push_back(0.0);
    }
    shape->crossings[compress_index[link]] += 1.0;
    shape->member_entry.push_back(compress_index[link]);
  }
  for (std::uint32_t link : shape->links) compress_index[link] = kNoIndex;
  for (std::size_t m = 0; m < shape->members(); ++m) {
    shape->has_empty_member |= member_begin[m] == member_begin[m + 1];
  }
  return shape;
}

// The shape of some members of `shape`, in the order given.
FlowNetwork::Shape FlowNetwork::State::member_shape(const FlowShape& shape,
                                                    std::span<const std::uint32_t> members) {
  std::vector<std::uint32_t> route_links, begin{0};
  for (std::uint32_t m : members) {
    route_links.insert(route_links.end(), shape.member_links.begin() + shape.member_begin[m],
                       shape.member_links.begin() + shape.member_begin[m + 1]);
    begin.push_back(static_cast<std::uint32_t>(route_links.size()));
  }
  return make_shape(route_links, begin);
}

void FlowNetwork::State::attach(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  const auto path = flow.links();
  flow.position.resize(path.size());
  for (std::uint32_t k = 0; k < path.size(); ++k) {
    auto& crossings = links[path[k]].crossings;
    flow.position[k] = static_cast<std::uint32_t>(crossings.size());
    crossings.push_back(Crossing{slot, k});
  }
}

// O(1) per link: the last crossing takes the removed one's place.
void FlowNetwork::State::detach(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  const auto path = flow.links();
  for (std::uint32_t k = 0; k < path.size(); ++k) {
    auto& crossings = links[path[k]].crossings;
    const std::uint32_t pos = flow.position[k];
    const Crossing moved = crossings.back();
    crossings[pos] = moved;
    flows[moved.flow_slot].position[moved.hop] = pos;
    crossings.pop_back();
    if (!loads.empty())
      add_load(path[k], -flow.multiplicity * flow.shape->crossings[k] * flow.rate_Bps);
  }
}

void FlowNetwork::State::add_load(std::uint32_t link, double load_Bps) {
  LinkLoad& load = loads[link];
  if (++load.changes < kLoadResum) {
    load.load_Bps += load_Bps;
    return;
  }
  sum_load(link);
}

void FlowNetwork::State::sum_load(std::uint32_t link) {
  LinkLoad& load = loads[link];
  load.changes = 0;
  load.load_Bps = 0;
  for (const Crossing& crossing : links[link].crossings) {
    const FlowState& flow = flows[crossing.flow_slot];
    load.load_Bps += flow.multiplicity * flow.shape->crossings[crossing.hop] * flow.rate_Bps;
  }
}

// Running loads cost every rate change a pass over the flow's links; they are kept from the
// first local settle on, for the networks that have them.
void FlowNetwork::State::keep_loads() {
  if (!loads.empty()) return;
  loads.resize(links.size());
  for (std::uint32_t link = 0; link < links.size(); ++link) sum_load(link);
}

void FlowNetwork::State::mark_dirty(std::uint32_t slot) {
  const auto path = flows[slot].links();
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

// The flow leaves its links and its slot; its links are marked for this instant's settle.
void FlowNetwork::State::retire(std::uint32_t slot) {
  mark_dirty(slot);
  remove(slot);
}

// The same without marking: for a flow whose load another takes over unchanged.
void FlowNetwork::State::remove(std::uint32_t slot) {
  FlowState& flow = flows[slot];
  if (flow.due) --live_dues;
  flow.due.reset();
  detach(slot);
  flow.active = false;
  flow.group_done = nullptr;
  flow.done = nullptr;
  slot_of.erase(flow.id);
  free_slots.push_back(slot);
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
  const double change_Bps = rate_Bps - flow.rate_Bps;
  flow.rate_Bps = rate_Bps;
  const auto path = flow.links();
  for (std::size_t k = 0; !loads.empty() && k < path.size(); ++k) {
    add_load(path[k], flow.multiplicity * flow.shape->crossings[k] * change_Bps);
  }
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
  struct Finished {
    Done done;
    GroupDone group_done;
    std::size_t members;
  };
  std::vector<Finished> finished;
  for (drop_stale_dues(); !dues.empty() && dues.front().at <= horizon; drop_stale_dues()) {
    const std::uint32_t slot = dues.front().slot;
    FlowState& flow = flows[slot];
    finished.push_back({std::move(flow.done), std::move(flow.group_done), flow.members()});
    flow.done = nullptr;
    flow.group_done = nullptr;
    retire(slot);
  }
  arm_wakeup();
  for (Finished& entry : finished) {
    if (entry.done) entry.done();
    if (entry.group_done) entry.group_done(entry.members);
  }
}

FlowNetwork::FlowNetwork(Engine& engine, std::vector<double> link_capacity_Bps)
    : state_(std::make_unique<State>(engine)) {
  state_->links.resize(link_capacity_Bps.size());
  state_->link_visit.assign(link_capacity_Bps.size(), 0);
  for (std::size_t l = 0; l < link_capacity_Bps.size(); ++l) {
    const double capacity = link_capacity_Bps[l];
    if (!(capacity > 0) || !std::isfinite(capacity)) {
      throw std::invalid_argument("FlowNetwork: link " + std::to_string(l) +
                                  " needs a finite capacity > 0, got " + std::to_string(capacity));
    }
    state_->links[l].capacity_Bps = capacity;
  }
  state_->compress_index.assign(link_capacity_Bps.size(), kNoIndex);
}

// Pending wakeup and settle events point at this object; they must not outlive it.
FlowNetwork::~FlowNetwork() {
  if (state_->wakeup) state_->engine.cancel(*state_->wakeup);
  if (state_->settle_event) state_->engine.cancel(*state_->settle_event);
}

namespace {

void check_flow_arguments(double bytes, double multiplicity, double rate_cap_Bps) {
  if (!(bytes >= 0) || !std::isfinite(bytes)) {
    throw std::invalid_argument("FlowNetwork::start: bytes must be finite and >= 0");
  }
  if (!(multiplicity > 0) || !std::isfinite(multiplicity) || !(rate_cap_Bps > 0)) {
    throw std::invalid_argument("FlowNetwork::start: multiplicity and rate cap must be > 0");
  }
}

}  // namespace

FlowId FlowNetwork::start(std::span<const std::uint32_t> links, double bytes, Done done,
                          double multiplicity, double rate_cap_Bps) {
  State& s = *state_;
  check_flow_arguments(bytes, multiplicity, rate_cap_Bps);
  const std::uint32_t one_member[] = {0, static_cast<std::uint32_t>(links.size())};
  Shape shape = s.make_shape(links, one_member);
  ++s.started;
  if (links.empty() || bytes == 0) {
    s.engine.schedule_at(s.engine.now(), [done = std::move(done)] {
      if (done) done();
    });
    return s.next_id++;
  }
  const std::uint32_t slot = s.new_flow(std::move(shape), bytes, multiplicity, rate_cap_Bps);
  s.flows[slot].done = std::move(done);
  s.mark_dirty(slot);
  return s.flows[slot].id;
}

FlowId FlowNetwork::start_group(std::span<const std::uint32_t> links,
                                std::span<const std::uint32_t> member_begin, double bytes,
                                GroupDone done, double multiplicity, double rate_cap_Bps) {
  return start_shape(make_shape(links, member_begin), bytes, std::move(done), multiplicity,
                     rate_cap_Bps);
}

FlowNetwork::Shape FlowNetwork::make_shape(std::span<const std::uint32_t> links,
                                           std::span<const std::uint32_t> member_begin) const {
  return state_->make_shape(links, member_begin);
}

FlowId FlowNetwork::start_shape(const Shape& shape, double bytes, GroupDone done,
                                double multiplicity, double rate_cap_Bps) {
  State& s = *state_;
  check_flow_arguments(bytes, multiplicity, rate_cap_Bps);
  if (!shape) throw std::invalid_argument("FlowNetwork::start_shape: no shape");
  if (shape->has_empty_member || bytes == 0) {
    // Members with nothing to send end now; the others travel as single flows.
    std::size_t ended = 0;
    for (std::size_t m = 0; m < shape->members(); ++m) {
      const std::span<const std::uint32_t> route(
          shape->member_links.data() + shape->member_begin[m],
          shape->member_begin[m + 1] - shape->member_begin[m]);
      if (route.empty() || bytes == 0) {
        ++ended;
        continue;
      }
      start(
          route, bytes, [done] { done(1); }, multiplicity, rate_cap_Bps);
      --s.started;
    }
    ++s.started;
    s.engine.schedule_at(s.engine.now(), [done = std::move(done), ended] {
      if (ended > 0) done(ended);
    });
    return s.next_id++;
  }
  ++s.started;
  const std::uint32_t slot = s.new_flow(shape, bytes, multiplicity, rate_cap_Bps);
  s.flows[slot].group_done = std::move(done);
  s.mark_dirty(slot);
  return s.flows[slot].id;
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

std::uint64_t FlowNetwork::classes_split() const {
  state_->settle();
  return state_->split;
}

std::uint64_t FlowNetwork::solutions_reused() const {
  state_->settle();
  return state_->reused;
}

}  // namespace wallsim
