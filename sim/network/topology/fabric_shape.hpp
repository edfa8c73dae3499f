// How many of each part a cluster of `num_gpus` GPUs has, and the aggregated switch-tier
// capacities: pure arithmetic on a ClusterSpec (hardware.md §2.2), kept apart from the graph
// so it can be checked by hand.
//
//   nodes        = ceil(num_gpus / gpus_per_node)   (one partial node below gpus_per_node)
//   domains      = ceil(num_gpus / gpus_per_domain) (one NVSwitch fabric each; the last may
//                                                   be partial)
//   SUs          = ceil(nodes / scalable_unit_nodes)
//   pods         = ceil(SUs / pod_scalable_units)
//   leaves       = nic.per_node x SUs               (one leaf per rail per SU)
//   spine tiers  = pods when SUs > 1, else 0        (one aggregated vertex per pod)
//   cores        = 1 when pods > 1, else 0          (one aggregated vertex)
//
// Capacities (bytes/s, per direction): a NIC port is its line rate; a leaf's up-links are as
// many ports as it has down-ports (one per node of a full SU) divided by the leaf
// oversubscription; a pod's spine-to-core capacity is the sum of its leaves' up-capacity
// divided by the spine oversubscription. A partial SU or pod is cabled like a full one.
#pragma once

#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim {

class FabricShape {
 public:
  FabricShape(const ClusterSpec& spec, int num_gpus)
      : gpus(num_gpus),
        nodes(ceil_div(num_gpus, spec.gpus_per_node)),
        domains(ceil_div(num_gpus, spec.gpus_per_domain())),
        scalable_units(ceil_div(nodes, spec.fabric.scalable_unit_nodes)),
        pods(ceil_div(scalable_units, spec.fabric.pod_scalable_units)),
        spec_(spec) {}

  int nics() const { return nodes * spec_.nic.per_node; }
  int leaves() const { return scalable_units * spec_.nic.per_node; }
  int spine_tiers() const { return scalable_units > 1 ? pods : 0; }
  int cores() const { return pods > 1 ? 1 : 0; }

  int leaf_of(int scalable_unit, int rail) const {
    return scalable_unit * spec_.nic.per_node + rail;
  }
  int pod_of_scalable_unit(int scalable_unit) const {
    return scalable_unit / spec_.fabric.pod_scalable_units;
  }

  // Gb/s -> bytes/s: x 1e9 / 8.
  double nic_Bps() const { return spec_.nic.bandwidth_Gbps * 1e9 / 8; }
  double leaf_up_Bps() const {
    return spec_.fabric.scalable_unit_nodes * nic_Bps() / spec_.fabric.leaf_oversubscription;
  }
  double spine_up_Bps() const {
    const double pod_leaves = double(spec_.fabric.pod_scalable_units) * spec_.nic.per_node;
    return pod_leaves * leaf_up_Bps() / spec_.fabric.spine_oversubscription;
  }

  const int gpus;
  const int nodes;
  const int domains;
  const int scalable_units;
  const int pods;

 private:
  static int ceil_div(int a, int b) { return (a + b - 1) / b; }
  const ClusterSpec& spec_;
};

}  // namespace wallsim
