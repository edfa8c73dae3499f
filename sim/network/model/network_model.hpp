// The network model interface and its registry.
//
// A NetworkModel executes collective plans on the engine. Models differ only in how they turn
// transfers into time:
//   analytical — alpha-beta: a plan takes its latency plus, per phase, its most loaded link's
//                bytes over capacity. Collectives never slow each other. Fastest.
//   flow       — flow-level: every transfer is a flow whose rate is the max-min fair share of
//                the links it crosses, recomputed as flows start and end, so concurrent
//                collectives on shared links slow each other.
// Adding a model: a file pair, one line in kModels (network_model.cpp), tests and a README entry.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/engine.hpp"
#include "sim/network/collective/collective_plan.hpp"

namespace wallsim {

// A collective's instances (see start_instances) turned once into what one model needs to
// start them: callers that start the same collective many times (every layer, every
// micro-batch) prepare it once and keep it. Opaque; made by the model that starts it.
class PreparedCollective {
 public:
  virtual ~PreparedCollective() = default;
};

class NetworkModel {
 public:
  using Done = std::function<void()>;
  using Prepared = std::shared_ptr<const PreparedCollective>;
  virtual ~NetworkModel() = default;

  virtual const char* name() const = 0;

  // Starts `plan` at the engine's current time; `done` runs when its last byte has arrived.
  // `multiplicity` counts identical instances running at the same time on the same links
  // (symmetric simulation); the analytical model ignores it.
  virtual void start(const CollectivePlan& plan, Done done, double multiplicity = 1.0) = 0;

  // Starts `instances.front()`, the instance the caller waits on, together with the others:
  // concurrent copies of the same collective on other GPUs (same shape, see same_shape) that
  // symmetric simulation does not replay. Every copy's traffic is charged on the links it
  // really crosses (flow: merge_instances, so the replayed instance meets the copies of the
  // collectives it shares links with); `done` runs when the first instance ends. The analytical
  // model times the first alone, as it times every collective.
  void start_instances(std::span<const CollectivePlan> instances, Done done) {
    start_prepared(prepare(instances), std::move(done));
  }

  // start_instances in two steps: prepare (the costly part, once per collective) and start.
  // A prepared collective is started only by the model that prepared it.
  virtual Prepared prepare(std::span<const CollectivePlan> instances) const = 0;
  virtual void start_prepared(const Prepared& prepared, Done done) = 0;

  // Wire bytes each link has carried (every started plan, times its multiplicity), indexed
  // by LinkId; for reports (link utilization, busiest links). Empty before the first plan.
  const std::vector<double>& link_bytes() const { return link_bytes_; }

 protected:
  // Models call this from start(): adds the plan's transfer bytes to the links they cross.
  void count_link_bytes(const CollectivePlan& plan, double multiplicity);
  // The same from a list of (link, bytes) crossings, added in order.
  void count_link_bytes(std::span<const std::pair<LinkId, double>> crossings);
  // The crossings count_link_bytes(plan, 1) would add, in its order.
  static void append_link_bytes(const CollectivePlan& plan,
                                std::vector<std::pair<LinkId, double>>& crossings);
  // Crossings summed per link, so a prepared collective adds each link once per start.
  static std::vector<std::pair<LinkId, double>> per_link_bytes(
      std::span<const std::pair<LinkId, double>> crossings);

 private:
  std::vector<double> link_bytes_;
};

// Creates a model by name over links with the given effective capacities. An unknown name
// throws InputError listing the valid ones ("Valid values are: analytical, flow").
std::unique_ptr<NetworkModel> make_network_model(std::string_view name, Engine& engine,
                                                 std::vector<double> capacity_Bps,
                                                 const std::string& where = "command line",
                                                 const std::string& json_path = "--network");

std::vector<std::string> network_model_names();

}  // namespace wallsim
