#include "sim/network/flow/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
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

}  // namespace

// Member routes (raw, concatenated; member i's from member_begin[i]) and what the network
// needs of them: the distinct links in order of first crossing, how often the members cross
// each, and for every raw entry the index of its distinct link.
struct FlowShape {
  std::vector<std::uint32_t> links;
  std::vector<double> crossings;
  std::vector<std::uint32_t> member_links;
  std::vector<std::uint32_t> member_begin;
  std::vector<std::uint32_t> member_entry;
  bool has_empty_member = false;
  std::size_t members() const { return member_begin.size() - 1; }
};

namespace {

// A single flow, or a class flow standing for several members that move at one rate.
struct FlowState {
  FlowId id = 0;
  bool active = false;
  FlowNetwork::Shape shape;
  std::vector<std::uint32_t> position;  // position[k]: index in shape->links[k]'s crossings
  double remaining_bytes = 0;           // per member, as of updated_at
  double rate_Bps = 0;                  // per member
  double multiplicity = 1;
  double cap_Bps = 0;
  Time updated_at;
  std::optional<Time> due;        // when the last byte arrives at the current rate
  std::uint64_t due_version = 0;  // which queue entry is this flow's current one
  FlowNetwork::Done done;             // single flows started with start()
  FlowNetwork::GroupDone group_done;  // class flows and the single flows split from one
  std::uint64_t visit = 0;
  // Class flows: per member, the entry of its route that was its bottleneck at the last check
  // (tried first: the bottleneck of a member seldom moves).
  std::vector<std::uint32_t> witness;
  bool expanded = false;  // solved member by member at this instant (its check failed)
  std::uint32_t local = 0;  // index among the component's flows at this instant

  std::span<const std::uint32_t> links() const { return shape->links; }
  std::size_t members() const { return shape->members(); }
};

// Relative slack of the max-min check: a link within it of its capacity is saturated, a rate
// within it of another is not faster. Far above the solver's rounding (a few ulps per flow on
// a link), far below any difference the simulation could show.
constexpr double kCheckTolerance = 1e-9;

constexpr auto kNoIndex = std::numeric_limits<std::uint32_t>::max();
constexpr auto kWholeFlow = kNoIndex;  // a problem flow that is a whole flow, not one member

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
  std::uint64_t split = 0;
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
  std::vector<std::uint32_t> compress_index;  // per link: scratch index, kNoIndex between uses
  std::vector<double> link_load_Bps, link_max_rate_Bps;
  std::vector<bool> bottleneck_for;
  std::vector<std::uint32_t> problem_slot, problem_member;  // per problem flow: its owner
  std::vector<double> member_crossings;
  // Link signatures: (flow, crossings) pairs of each component link, and links by hash.
  std::vector<std::pair<std::uint32_t, double>> signature;
  std::vector<std::size_t> signature_begin;
  struct TableSlot {
    std::uint64_t hash = 0;
    std::uint32_t index = 0;  // component link
    std::uint64_t stamp = 0;  // the slot is in use when it equals table_stamp
  };
  std::vector<TableSlot> table;  // links by signature hash
  std::uint64_t table_stamp = 0;
  std::vector<std::uint32_t> problem_link_stamp;
  // Merging costs a signature per link; where it found little to merge (random traffic), the
  // next settles skip it and try again later. It never changes a rate, only the solve's size.
  std::uint32_t merge_backoff = 0, merge_skipped = 0;
  std::uint64_t expansions = 0;
  MaxMinProblem problem;
  MaxMinSolver solver;
  std::vector<double> rates_Bps;

  const FlowState* find(FlowId id) const {
    const auto it = slot_of.find(id);
    return it == slot_of.end() ? nullptr : &flows[it->second];
  }
  std::uint32_t allocate_slot();
  std::uint32_t new_flow(Shape shape, double bytes, double multiplicity, double cap_Bps);
  Shape make_shape(std::span<const std::uint32_t> route_links,
                   std::span<const std::uint32_t> member_begin);
  Shape member_shape(const FlowShape& shape, std::span<const std::uint32_t> members);
  void attach(std::uint32_t slot);
  void detach(std::uint32_t slot);
  void mark_dirty(std::uint32_t slot);
  void request_settle();
  void settle();
  void collect_component();
  void build_problem();
  void add_links(bool merge_equal);
  std::uint64_t sign_link(std::uint32_t link);
  bool classes_hold();
  bool members_have_bottlenecks(std::uint32_t problem_flow);
  void add_member(const FlowState& flow, std::uint32_t member);
  void resolve_expanded(std::uint32_t slot, std::uint32_t first, std::uint32_t last);
  void retire(std::uint32_t slot);
  void remove(std::uint32_t slot);
  void apply_rate(std::uint32_t slot, double rate_Bps);
  bool is_live(const Due& entry) const;
  void push_due(std::uint32_t slot);
  void drop_stale_dues();
  void arm_wakeup();
  void wake();
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

// A flow on `shape`'s links, attached and registered; its rate waits for the next settle.
std::uint32_t FlowNetwork::State::new_flow(Shape shape, double bytes, double multiplicity,
                                           double cap_Bps) {
  const std::uint32_t slot = allocate_slot();
  FlowState& flow = flows[slot];
  flow.id = next_id++;
  flow.active = true;
  flow.shape = std::move(shape);
  flow.witness.clear();
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
    throw std::invalid_argument("FlowNetwork: member_begin must rise from 0 to the number of "
                                "links, with at least one member");
  }
  if (!route_links.empty() && *std::max_element(route_links.begin(), route_links.end()) >=
                                  links.size()) {
    throw std::out_of_range("FlowNetwork::start: no link " +
                            std::to_string(*std::max_element(route_links.begin(),
                                                             route_links.end())));
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
  }
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
      for (std::uint32_t link : flow.links()) {
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
  bool any_expanded = false;
  for (std::uint32_t i = 0; i < component_flows.size(); ++i) {
    flows[component_flows[i]].local = i;
    any_expanded |= flows[component_flows[i]].expanded;
  }
  const bool try_merge = !any_expanded && merge_skipped >= merge_backoff;
  add_links(try_merge);
  if (try_merge) {
    const bool paid_off = 8 * problem.num_links() < 7 * component_links.size();
    merge_backoff = paid_off ? 0 : std::min<std::uint32_t>(2 * merge_backoff + 1, 64);
    merge_skipped = 0;
  } else {
    ++merge_skipped;
  }
  problem_slot.clear();
  problem_member.clear();
  for (std::uint32_t slot : component_flows) {
    const FlowState& flow = flows[slot];
    if (flow.expanded) {
      for (std::uint32_t m = 0; m < flow.members(); ++m) {
        add_member(flow, m);
        problem_slot.push_back(slot);
        problem_member.push_back(m);
      }
      continue;
    }
    local_path.clear();
    const auto path = flow.links();
    if (problem.num_links() == component_links.size()) {  // nothing merged
      for (std::uint32_t link : path) local_path.push_back(links[link].local);
      problem.add_flow(local_path, flow.shape->crossings, flow.multiplicity, flow.cap_Bps);
      problem_slot.push_back(slot);
      problem_member.push_back(kWholeFlow);
      continue;
    }
    // Links merged into one problem link are one constraint: the flow crosses it once.
    member_crossings.clear();
    for (std::size_t k = 0; k < path.size(); ++k) {
      const std::uint32_t local = links[path[k]].local;
      if (problem_link_stamp[local] == slot + 1) continue;
      problem_link_stamp[local] = slot + 1;
      local_path.push_back(local);
      member_crossings.push_back(flow.shape->crossings[k]);
    }
    for (std::uint32_t local : local_path) problem_link_stamp[local] = 0;
    problem.add_flow(local_path, member_crossings, flow.multiplicity, flow.cap_Bps);
    problem_slot.push_back(slot);
    problem_member.push_back(kWholeFlow);
  }
}

// Problem links for the component's links. Links with the same capacity crossed by the same
// flows the same number of times are the same constraint at every level of the progressive
// filling (same capacity, same frozen load, same unfrozen weight): they become one problem
// link, so a collective's hundreds of symmetric links cost the solver a few. Not while a class
// is solved member by member (its members' crossings are not in the link lists).
void FlowNetwork::State::add_links(bool merge_equal) {
  const auto n = static_cast<std::uint32_t>(component_links.size());
  if (!merge_equal) {
    for (std::uint32_t link : component_links) {
      links[link].local = problem.add_link(links[link].capacity_Bps);
    }
    problem_link_stamp.assign(problem.num_links(), 0);
    return;
  }
  // Open addressing over (hash, component link), a power-of-two table at most half full,
  // emptied by a new stamp instead of clearing; the first link of each signature (in BFS
  // order) is its representative.
  std::size_t size = 16;
  while (size < 2 * std::size_t{n}) size *= 2;
  if (table.size() < size) table.assign(size, TableSlot{});
  const std::size_t mask = size - 1;
  ++table_stamp;
  signature.clear();
  signature_begin.assign(1, 0);
  auto same = [&](std::uint32_t i, std::uint32_t j) {
    const auto a = std::span(signature).subspan(signature_begin[i],
                                                signature_begin[i + 1] - signature_begin[i]);
    const auto b = std::span(signature).subspan(signature_begin[j],
                                                signature_begin[j + 1] - signature_begin[j]);
    return links[component_links[i]].capacity_Bps == links[component_links[j]].capacity_Bps &&
           std::equal(a.begin(), a.end(), b.begin(), b.end());
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t link = component_links[i];
    const std::uint64_t hash = sign_link(link);
    std::optional<std::uint32_t> found;
    std::size_t at = hash & mask;
    for (; table[at].stamp == table_stamp; at = (at + 1) & mask) {
      if (table[at].hash == hash && same(i, table[at].index)) {
        found = table[at].index;
        break;
      }
    }
    if (found) {
      links[link].local = links[component_links[*found]].local;
    } else {
      table[at] = TableSlot{hash, i, table_stamp};
      links[link].local = problem.add_link(links[link].capacity_Bps);
    }
  }
  problem_link_stamp.assign(problem.num_links(), 0);
}

// Appends the link's sorted (component flow, crossings) pairs to `signature`; returns their
// hash with the capacity's.
std::uint64_t FlowNetwork::State::sign_link(std::uint32_t link) {
  const std::size_t begin = signature.size();
  for (const Crossing& crossing : links[link].crossings) {
    const FlowState& flow = flows[crossing.flow_slot];
    signature.emplace_back(flow.local, flow.shape->crossings[crossing.hop]);
  }
  std::sort(signature.begin() + static_cast<std::ptrdiff_t>(begin), signature.end());
  signature_begin.push_back(signature.size());
  std::uint64_t hash;
  std::memcpy(&hash, &links[link].capacity_Bps, sizeof hash);
  for (std::size_t k = begin; k < signature.size(); ++k) {
    std::uint64_t count;
    std::memcpy(&count, &signature[k].second, sizeof count);
    hash = (hash ^ signature[k].first) * 0x9e3779b97f4a7c15ULL;
    hash = (hash ^ count) * 0x9e3779b97f4a7c15ULL;
    hash ^= hash >> 29;
  }
  return hash;
}

// One member of a class as a flow of its own, its route compressed on the fly.
void FlowNetwork::State::add_member(const FlowState& flow, std::uint32_t member) {
  const FlowShape& shape = *flow.shape;
  local_path.clear();
  member_crossings.clear();
  for (auto i = shape.member_begin[member]; i < shape.member_begin[member + 1]; ++i) {
    const std::uint32_t link = shape.member_links[i];
    if (compress_index[link] == kNoIndex) {
      compress_index[link] = static_cast<std::uint32_t>(local_path.size());
      local_path.push_back(links[link].local);
      member_crossings.push_back(0.0);
    }
    member_crossings[compress_index[link]] += 1.0;
  }
  for (auto i = shape.member_begin[member]; i < shape.member_begin[member + 1]; ++i) {
    compress_index[shape.member_links[i]] = kNoIndex;
  }
  problem.add_flow(local_path, member_crossings, flow.multiplicity, flow.cap_Bps);
}

// The one solve of this instant, over every component that a start or an end touched; again,
// member by member, for any class whose members the solution does not serve alike.
void FlowNetwork::State::settle() {
  if (dirty_links.empty()) return;
  collect_component();
  dirty_links.clear();
  if (component_flows.empty()) return;
  do {
    build_problem();
    solver.solve(problem, rates_Bps);
    ++solved;
    recomputed += component_flows.size();
  } while (!classes_hold());
  const auto solved_flows = static_cast<std::uint32_t>(problem.num_flows());
  for (std::uint32_t p = 0; p < solved_flows; ++p) {
    if (problem_member[p] == kWholeFlow) apply_rate(problem_slot[p], rates_Bps[p]);
  }
  for (std::uint32_t first = 0, last; first < solved_flows; first = last) {
    last = first + 1;
    if (problem_member[first] == kWholeFlow) continue;
    while (last < solved_flows && problem_slot[last] == problem_slot[first]) ++last;
    resolve_expanded(problem_slot[first], first, last);
  }
  arm_wakeup();
}

// Checks every class flow of the solved component (header: each member needs a bottleneck of
// its own); splits those that fail and returns false when any did.
bool FlowNetwork::State::classes_hold() {
  bool any_class = false;
  for (std::uint32_t p = 0; p < problem.num_flows(); ++p) {
    any_class |= problem_member[p] == kWholeFlow && flows[problem_slot[p]].members() > 1;
  }
  if (!any_class) return true;
  const std::size_t n = problem.num_links();
  link_load_Bps.assign(n, 0.0);
  link_max_rate_Bps.assign(n, 0.0);
  for (std::uint32_t f = 0; f < problem.num_flows(); ++f) {
    for (auto k = problem.link_begin[f]; k < problem.link_begin[f + 1]; ++k) {
      const std::uint32_t link = problem.link_index[k];
      link_load_Bps[link] += problem.weight[f] * problem.crossings[k] * rates_Bps[f];
      link_max_rate_Bps[link] = std::max(link_max_rate_Bps[link], rates_Bps[f]);
    }
  }
  bool hold = true;
  for (std::uint32_t p = 0; p < problem.num_flows(); ++p) {
    FlowState& flow = flows[problem_slot[p]];
    if (problem_member[p] != kWholeFlow || flow.members() < 2) continue;
    if (!members_have_bottlenecks(p)) {
      flow.expanded = true;
      ++expansions;
      hold = false;
    }
  }
  return hold;
}

bool FlowNetwork::State::members_have_bottlenecks(std::uint32_t problem_flow) {
  FlowState& flow = flows[problem_slot[problem_flow]];
  const FlowShape& shape = *flow.shape;
  const double rate = rates_Bps[problem_flow];
  if (rate >= flow.cap_Bps * (1 - kCheckTolerance)) return true;
  // Which of the class's links would be a bottleneck for a member crossing it.
  bottleneck_for.assign(shape.links.size(), false);
  bool any = false;
  for (std::size_t k = 0; k < shape.links.size(); ++k) {
    const std::uint32_t local = links[shape.links[k]].local;
    const bool saturated =
        link_load_Bps[local] >= problem.capacity_Bps[local] * (1 - kCheckTolerance);
    bottleneck_for[k] = saturated && link_max_rate_Bps[local] <= rate * (1 + kCheckTolerance);
    any |= bottleneck_for[k];
  }
  if (!any) return false;
  if (flow.witness.size() != shape.members()) flow.witness.assign(shape.members(), 0);
  for (std::size_t m = 0; m < shape.members(); ++m) {
    std::uint32_t& witness = flow.witness[m];
    if (witness >= shape.member_begin[m] && witness < shape.member_begin[m + 1] &&
        bottleneck_for[shape.member_entry[witness]]) {
      continue;
    }
    bool found = false;
    for (auto i = shape.member_begin[m]; !found && i < shape.member_begin[m + 1]; ++i) {
      found = bottleneck_for[shape.member_entry[i]];
      if (found) witness = i;
    }
    if (!found) return false;
  }
  return true;
}

// A class solved member by member (problem flows [first, last)): members of equal rate stay
// together as a class (their bytes left are equal: they were one flow until now), each group a
// flow of its own from now on. Loads and rates stay as solved, so nothing is re-solved; the
// next solve checks the new classes like any other.
void FlowNetwork::State::resolve_expanded(std::uint32_t slot, std::uint32_t first,
                                          std::uint32_t last) {
  std::vector<std::uint32_t> order(last - first);
  std::iota(order.begin(), order.end(), 0u);
  auto rate_of = [&](std::uint32_t m) { return rates_Bps[first + m]; };
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return rate_of(a) < rate_of(b); });
  FlowState& flow = flows[slot];
  flow.expanded = false;
  if (rate_of(order.front()) == rate_of(order.back())) {
    apply_rate(slot, rate_of(order.front()));
    return;
  }
  const Time now = engine.now();
  const double remaining =
      std::max(0.0, flow.remaining_bytes - flow.rate_Bps * (now - flow.updated_at).seconds());
  const Shape shape = flow.shape;
  const GroupDone done = flow.group_done;
  const double multiplicity = flow.multiplicity, cap = flow.cap_Bps;
  remove(slot);
  ++split;
  for (std::size_t begin = 0, end; begin < order.size(); begin = end) {
    end = begin + 1;
    while (end < order.size() && rate_of(order[end]) == rate_of(order[begin])) ++end;
    const auto members = std::span(order).subspan(begin, end - begin);
    const std::uint32_t part = new_flow(member_shape(*shape, members), remaining, multiplicity, cap);
    flows[part].group_done = done;
    apply_rate(part, rate_of(members.front()));
  }
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
      start(route, bytes, [done] { done(1); }, multiplicity, rate_cap_Bps);
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

double FlowNetwork::capacity_Bps(std::uint32_t link) const {
  return state_->links.at(link).capacity_Bps;
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

}  // namespace wallsim
