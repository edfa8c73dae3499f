#include "sim/network/model/flow_model.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <stdexcept>

namespace wallsim {
namespace {

// One class of a phase: its members' routes concatenated, member i's from begin[i].
struct TransferClass {
  double bytes = 0;
  std::vector<LinkId> links;
  std::vector<std::uint32_t> begin{0};
};

std::uint64_t mix(std::uint64_t hash, std::uint64_t word) {
  hash = (hash ^ word) * 0x9e3779b97f4a7c15ULL;
  return hash ^ (hash >> 29);
}

std::uint64_t bits(double value) {
  std::uint64_t word;
  std::memcpy(&word, &value, sizeof word);
  return word;
}

// Candidate classes: transfers of equal bytes whose routes cross links of the same capacities
// in the same order. Transfers are ordered by a hash of that signature and grouped when the
// signatures are equal; the network checks each class after every solve and splits it where
// the candidates differ after all, so the grouping decides speed, never rates.
std::vector<TransferClass> classes_of(const Phase& phase, const std::vector<double>& capacity) {
  const auto& transfers = phase.transfers;
  std::vector<std::uint64_t> signature(transfers.size());
  for (std::size_t t = 0; t < transfers.size(); ++t) {
    std::uint64_t hash = mix(transfers[t].route.size(), bits(transfers[t].bytes));
    for (LinkId link : transfers[t].route) hash = mix(hash, bits(capacity[link]));
    signature[t] = hash;
  }
  std::vector<std::uint32_t> order(transfers.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return signature[a] != signature[b] ? signature[a] < signature[b] : a < b;
  });
  auto same_class = [&](std::uint32_t a, std::uint32_t b) {
    const Route& x = transfers[a].route;
    const Route& y = transfers[b].route;
    if (signature[a] != signature[b] || transfers[a].bytes != transfers[b].bytes ||
        x.size() != y.size()) {
      return false;
    }
    for (std::size_t k = 0; k < x.size(); ++k) {
      if (capacity[x[k]] != capacity[y[k]]) return false;
    }
    return true;
  };
  std::vector<TransferClass> classes;
  for (std::size_t first = 0; first < order.size();) {
    TransferClass& group = classes.emplace_back();
    group.bytes = transfers[order[first]].bytes;
    std::size_t last = first;
    for (; last < order.size() && same_class(order[first], order[last]); ++last) {
      const Route& route = transfers[order[last]].route;
      group.links.insert(group.links.end(), route.begin(), route.end());
      group.begin.push_back(static_cast<std::uint32_t>(group.links.size()));
    }
    first = last;
  }
  return classes;
}

}  // namespace

// A merged plan as the network starts it: per phase, its classes as flow shapes.
struct FlowModel::Plan final : PreparedCollective {
  struct Class {
    double bytes = 0;
    FlowNetwork::Shape shape;
  };
  Time latency;
  Time min_transfer_time;
  std::vector<std::vector<Class>> phases;
  std::vector<std::size_t> transfers;  // per phase
  std::vector<std::pair<LinkId, double>> crossings;
};

struct FlowModel::Run {
  std::shared_ptr<const Plan> plan;
  Done done;
  double multiplicity = 1;
  Time earliest_end;
  std::size_t phase = 0;
  std::size_t flows_left = 0;
};

std::shared_ptr<const FlowModel::Plan> FlowModel::make_plan(const CollectivePlan& merged) const {
  auto plan = std::make_shared<Plan>();
  plan->latency = merged.latency;
  plan->min_transfer_time = merged.min_transfer_time;
  for (const Phase& phase : merged.phases) {
    auto& classes = plan->phases.emplace_back();
    for (const TransferClass& group : classes_of(phase, capacity_Bps_)) {
      classes.push_back({group.bytes, network_.make_shape(group.links, group.begin)});
    }
    plan->transfers.push_back(phase.transfers.size());
  }
  append_link_bytes(merged, plan->crossings);
  plan->crossings = per_link_bytes(plan->crossings);
  return plan;
}

void FlowModel::start(const CollectivePlan& plan, Done done, double multiplicity) {
  launch(make_plan(plan), std::move(done), multiplicity);
}

// One merged plan: its flows stand for every instance, so each link is charged by every
// instance that crosses it, and the first instance ends when the merged plan does.
NetworkModel::Prepared FlowModel::prepare(std::span<const CollectivePlan> instances) const {
  if (instances.empty()) throw std::invalid_argument("FlowModel::prepare: no instance");
  if (instances.size() == 1) return make_plan(instances.front());
  return make_plan(merge_instances(instances));
}

void FlowModel::start_prepared(const Prepared& prepared, Done done) {
  auto plan = std::dynamic_pointer_cast<const Plan>(prepared);
  if (!plan) throw std::invalid_argument("FlowModel: a collective prepared by another model");
  launch(std::move(plan), std::move(done), 1.0);
}

void FlowModel::launch(std::shared_ptr<const Plan> plan, Done done, double multiplicity) {
  if (multiplicity == 1.0) {
    count_link_bytes(plan->crossings);
  } else {
    std::vector<std::pair<LinkId, double>> scaled = plan->crossings;
    for (auto& crossing : scaled) crossing.second *= multiplicity;
    count_link_bytes(scaled);
  }
  auto run = std::make_shared<Run>();
  run->earliest_end = engine_.now() + plan->latency + plan->min_transfer_time;
  run->plan = std::move(plan);
  run->done = std::move(done);
  run->multiplicity = multiplicity;
  engine_.schedule_after(run->plan->latency, [this, run] { start_phase(run); });
}

void FlowModel::start_phase(const std::shared_ptr<Run>& run) {
  if (run->phase == run->plan->phases.size()) {
    finish(run);
    return;
  }
  run->flows_left = run->plan->transfers[run->phase];
  if (run->flows_left == 0) {
    ++run->phase;
    start_phase(run);
    return;
  }
  auto done = [this, run](std::size_t members_done) {
    run->flows_left -= members_done;
    if (run->flows_left > 0) return;
    ++run->phase;
    start_phase(run);
  };
  for (const Plan::Class& group : run->plan->phases[run->phase]) {
    network_.start_shape(group.shape, group.bytes, done, run->multiplicity);
  }
}

void FlowModel::finish(const std::shared_ptr<Run>& run) {
  if (engine_.now() >= run->earliest_end) {
    run->done();
    return;
  }
  engine_.schedule_at(run->earliest_end, std::move(run->done));
}

}  // namespace wallsim
