#include "sim/network/model/flow_model.hpp"

namespace wallsim {

struct FlowModel::Run {
  CollectivePlan plan;
  Done done;
  double multiplicity = 1;
  Time earliest_end;
  std::size_t phase = 0;
  std::size_t flows_left = 0;
};

void FlowModel::start(const CollectivePlan& plan, Done done, double multiplicity) {
  launch(plan, std::move(done), multiplicity);
}

// One merged plan: its flows stand for every instance, so each link is charged by every
// instance that crosses it, and the first instance ends when the merged plan does.
void FlowModel::start_instances(std::span<const CollectivePlan> instances, Done done) {
  if (instances.size() == 1) {
    launch(instances.front(), std::move(done), 1.0);
    return;
  }
  launch(merge_instances(instances), std::move(done), 1.0);
}

void FlowModel::launch(CollectivePlan plan, Done done, double multiplicity) {
  count_link_bytes(plan, multiplicity);
  auto run = std::make_shared<Run>();
  run->earliest_end = engine_.now() + plan.latency + plan.min_transfer_time;
  run->plan = std::move(plan);
  run->done = std::move(done);
  run->multiplicity = multiplicity;
  engine_.schedule_after(run->plan.latency, [this, run] { start_phase(run); });
}

void FlowModel::start_phase(const std::shared_ptr<Run>& run) {
  if (run->phase == run->plan.phases.size()) {
    finish(run);
    return;
  }
  const Phase& phase = run->plan.phases[run->phase];
  run->flows_left = phase.transfers.size();
  if (run->flows_left == 0) {
    ++run->phase;
    start_phase(run);
    return;
  }
  for (const Transfer& transfer : phase.transfers) {
    network_.start(
        transfer.route, transfer.bytes,
        [this, run] {
          if (--run->flows_left > 0) return;
          ++run->phase;
          start_phase(run);
        },
        run->multiplicity);
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
