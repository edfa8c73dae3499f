// The space of a layout sweep: a list of values per knob, enumerated as their Cartesian product.
//
// A point is one value of every knob. Points are numbered 0 .. size()-1 in a fixed mixed-radix
// order (tp varies slowest, then sp, cp, pp, vpp, schedule, ep, etp, dispatcher, micro_batch,
// recompute, distributed optimizer, data sharding, overlap, offload, graphs), so an index names the
// same point on every machine and in every shard. The default space (default_space) on a dense
// model: tp ∈ {1,2,4,8} within an NVLink domain, sequence parallelism on, cp = 1 (∈ {1,2,4,8} from
// 16K tokens), pp over the divisors of the GPU count that fit the layers, vpp over the splits the
// layers allow, micro_batch ∈ {1,2,4}, recompute ∈ {none, selective, full}, distributed optimizer
// and overlaps on. On a mixture-of-experts model also ep ∈ {1,2,4,…,64} (dividing the expert
// count), etp ∈ {1,2,4,8} within an NVLink domain and the dispatcher ∈ {alltoall, allgather}.
// `--vary k=v,...` replaces a knob's list (apply_vary). The pipeline schedule is Megatron's choice
// (interleaved when vpp > 1, else 1f1b) unless `--vary schedule=...` lists others (e.g.
// megatron,zb_h1,zb_h2); a schedule that cannot run a point's shape prunes the point with the
// schedule's reason. Data sharding follows the distributed-optimizer switch (or the base config's
// parallel.data_sharding) unless `--vary sharding=none,optimizer,grads,params` lists ZeRO stages,
// which then decide it.
// Offloading follows the base config's training.offload unless `--vary offload=none,activations,
// optimizer` lists choices: nothing offloaded, every decoder layer's activations but a chunk's
// last, or the whole optimizer stepped on the CPU (with the precision-aware optimizer Megatron
// requires for it).
// CUDA graphs follow the base config's training.cuda_graphs unless `--vary graphs=none,per_layer,
// full_iteration` lists scopes: they trade host issue time for memory (static inputs and the
// graph pool, models/memory.cpp); full_iteration prunes dropless MoE points with its reason.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/parallel_spec.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models {

// A sweep's offloading choice (--vary offload=...); see the header comment.
enum class SweepOffload { kNone, kActivations, kOptimizer };
const char* to_string(SweepOffload offload);  // "none", "activations", "optimizer"
std::optional<SweepOffload> parse_sweep_offload(const std::string& name);
// A sweep's CUDA-graph scope (--vary graphs=...), by training.cuda_graphs's names.
std::optional<CudaGraphs> parse_sweep_graphs(const std::string& name);

struct SweepPoint {
  std::int64_t tp = 1;
  bool sequence_parallel = true;  // requested; effective only when tp > 1
  std::int64_t cp = 1;
  std::int64_t pp = 1;
  std::int64_t vpp = 1;
  std::string schedule;  // a registered pipeline schedule; empty: Megatron's choice by vpp
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;  // parallel.moe_dispatcher
  std::int64_t micro_batch = 1;
  Recompute recompute = Recompute::none;
  bool distributed_optimizer = true;
  // training.overlap.{tp_comm, dp_grad_reduce, dp_param_gather}, and shared_expert for a model
  // with shared experts unless the dispatcher is allgather (Megatron-Core cannot overlap it there)
  bool overlap = true;
  // parallel.data_sharding; nullopt: what distributed_optimizer implies. When set,
  // distributed_optimizer follows it.
  std::optional<DataSharding> sharding;
  std::optional<SweepOffload> offload;    // nullopt: the base config's training.offload
  std::optional<CudaGraphs> cuda_graphs;  // nullopt: the base config's training.cuda_graphs
  // placement.gpus_per_domain (the job's whole-node share of each NVLink domain); nullopt: the
  // base config's placement
  std::optional<std::int64_t> placement;
  bool operator==(const SweepPoint&) const = default;
};

// The sharding a point runs: its own, or "optimizer" / "none" by distributed_optimizer.
DataSharding effective_sharding(const SweepPoint& point);

// The schedule a point runs: its own, or Megatron's choice ("interleaved" when vpp > 1, "1f1b").
std::string effective_schedule(const SweepPoint& point);

// A stable, file-name-safe name of a point, e.g. "tp8-cp1-pp4-vpp5-mb1-none"; a schedule other
// than Megatron's choice adds "-zb_h1" (its name) after vpp; expert layouts add "-ep8", "-etp2"
// (when > 1) and "-allgather"/"-flex" after vpp; switches that are off add
// "-nosp" (only when tp > 1), "-nodo", "-noov"; a stated sharding adds "-ddp", "-zero1", "-zero2"
// or "-fsdp" (none, optimizer, grads, params) in place of "-nodo"; a stated offload adds
// "-nooffload", "-offload-act" or "-offload-opt"; stated CUDA graphs add "-eager", "-graphs" or
// "-fullgraph" (none, per_layer, full_iteration) last.
std::string point_id(const SweepPoint& point);

struct SweepSpace {
  std::vector<std::int64_t> tp{1};
  std::vector<bool> sequence_parallel{true};
  std::vector<std::int64_t> cp{1};
  std::vector<std::int64_t> pp{1};
  std::vector<std::int64_t> vpp{1};
  std::vector<std::string> schedule{""};
  std::vector<std::int64_t> ep{1};
  std::vector<std::int64_t> etp{1};
  std::vector<MoeDispatcher> dispatcher{MoeDispatcher::kAllToAll};
  std::vector<std::int64_t> micro_batch{1};
  std::vector<Recompute> recompute{Recompute::none};
  std::vector<bool> distributed_optimizer{true};
  std::vector<std::optional<DataSharding>> sharding{std::nullopt};
  std::vector<bool> overlap{true};
  std::vector<std::optional<SweepOffload>> offload{std::nullopt};
  std::vector<std::optional<CudaGraphs>> graphs{std::nullopt};
  std::vector<std::optional<std::int64_t>> placement{std::nullopt};

  std::int64_t size() const;
  // The point with this index (0 <= index < size()).
  SweepPoint at(std::int64_t index) const;
  // The index of the point that differs from `index` only in its recompute, which becomes
  // recompute[position].
  std::int64_t with_recompute(std::int64_t index, std::size_t position) const;
};

// The knob names --vary accepts, in enumeration order.
const std::vector<std::string>& sweep_knob_names();

// Whether the space varies ep, etp or the dispatcher away from the dense default (1, 1,
// alltoall): only a mixture-of-experts model can be swept so.
bool sweeps_experts(const SweepSpace& space);

struct SpaceShape {
  std::int64_t layers = 1;
  std::int64_t num_gpus = 1;
  std::int64_t gpus_per_domain = 8;  // GPUs of one NVLink domain, where TP belongs
  std::int64_t seq_len = 0;
  std::int64_t experts = 0;  // routed experts; 0 for a dense model
};

// The default space for a dense model of `layers` on `num_gpus` GPUs (see the header comment):
// tp ∈ {1,2,4,8} ≤ gpus_per_domain; pp: every divisor of num_gpus that is ≤ layers; vpp: 1 and
// every v > 1 with layers % (pp·v) == 0 for some pp in the list; cp = 1, or from 16K tokens on
// cp ∈ {1,2,4,8} (dividing num_gpus), where context parallelism starts to pay. With experts:
// ep over the powers of two up to 64 that divide the experts and num_gpus, etp ∈ {1,2,4,8} ≤
// gpus_per_domain, dispatcher ∈ {alltoall, allgather}.
SweepSpace default_space(const SpaceShape& shape);

// Applies one "--vary" assignment "knob=v1,v2,..." (integers for sizes; none|selective|full for
// recompute; alltoall|allgather|flex for dispatcher; on|off|true|false for sp, dist_opt,
// overlap; megatron or a registered schedule name for schedule). Throws InputError naming the knob
// and what is allowed.
void apply_vary(SweepSpace& space, const std::string& assignment);

// Each knob's values as text, for output headers ({"tp": "1,2,4,8", ...}); ep, etp and
// dispatcher only when they differ from the dense default (1, 1, alltoall).
std::vector<std::pair<std::string, std::string>> describe_space(const SweepSpace& space);

}  // namespace wallsim::models
