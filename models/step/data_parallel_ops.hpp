// Data-parallel gradient reduction, parameter all-gather and the optimizer step of one rank
// (Megatron-LM's DistributedDataParallel and distributed optimizer; mechanics.md §6.2).
//
// Buckets: each model chunk has its own gradient buffer. Parameters enter buckets in reverse
// registration order (the order their gradients become ready); a bucket closes once it holds
// at least max(40M, 1M·|DP×CP|) parameters. Megatron turns bucketing off (one bucket per chunk)
// when overlap_grad_reduce is off, on pipeline stages after the first, and for model chunks
// after the first (distributed_data_parallel.py: "data-parallel communication on these stages
// is not on the critical path"; training.py get_model: disable_bucketing = chunk > 0).
//
// Routed-expert parameters (ParamUnit::expert) have buffers and buckets of their own, reduced
// and gathered over the expert-DP group (Megatron's expert_parallel_buffers); their optimizer
// shard is over expert DP. Gradients reduce over DP×CP with a reduce-scatter (distributed
// optimizer) or an all-reduce, 4 bytes per parameter (2 with grad_reduce_dtype bf16), on stream
// kDp: with overlap each bucket right after the last of its gradients is ready in the last
// micro-batch's backward, otherwise after the whole backward. Tied embeddings on pp > 1 then
// all-reduce the embedding gradient between the first and last stage. The optimizer step streams 30
// bytes per parameter of the local shard (Adam: read fp32 master, grad, m, v; write master, m, v;
// write the bf16 parameter; fewer with the precision-aware optimizer, optimizer_precision.hpp).
// The distributed optimizer all-gathers the updated bf16 parameters per bucket: after the step,
// or with overlap_param_gather lazily in the next forward, which this step's first micro-batch
// stands for (steady state): bucket i's first use waits for its all-gather
// and dispatches bucket i+1's (Megatron's forward pre-hook), so the first one is exposed.
//
// Sharded gradients and parameters (DataSharding kGrads / kParams: ZeRO-2 / ZeRO-3, Megatron-FSDP's
// optim_grads / optim_grads_params). Buckets are FSDP units: each decoder layer, the embedding,
// and the output layer with its final norm (and the MTP layers) — Megatron-FSDP's
// fsdp_unit_modules (TransformerLayer, LanguageModelEmbedding); routed experts form units of their
// own over expert DP. Gradients are not delayed to the last micro-batch: every micro-batch's
// backward reduce-scatters each unit's gradient (MegatronFSDP.__init__: is_delay_grad_reduce only
// for no_shard and optim), so the unit's unsharded gradient lives from its backward until that
// reduce-scatter ends (grad_bytes_per_param each). ZeRO-2 keeps whole bf16 parameters and
// gathers the updated ones after the optimizer step, like the distributed optimizer. ZeRO-3 keeps
// 1/|DP×CP| of them and all-gathers each unit (2 bytes per parameter) before its forward and again
// before its backward in every micro-batch, on stream kDpGather; using unit i dispatches unit
// i+1's gather (unit i−1's in the backward), the prefetch of one unit that Megatron-FSDP's
// communication unit of twice the average FSDP unit and FSDP2's implicit prefetch give. The
// gathered parameters are allocated when the gather starts and freed when the unit's last kernel
// of that pass ends; the embedding's backward reads no weights and is not gathered again; no
// gather follows the optimizer step. Per step and parameter with m
// micro-batches: ZeRO-1 moves 4 bytes reduce-scattered + 2 gathered, ZeRO-3 m·(4 + 2 + 2) (the
// ZeRO paper's 2Ψ vs 3Ψ elements at m = 1: Rajbhandari et al. 2020, §7; less the embedding's
// backward gather).
//
// Hybrid sharding (parallel.fsdp_shard_group S): `group` is the shard group of S consecutive
// DP×CP ranks, over which state is sharded, parameters gathered and gradients reduce-scattered;
// every reduce-scatter of a dense bucket or unit is followed on stream kDp by an all-reduce of the
// 1/S shard over the replica group (the dp·cp / S ranks holding that shard), per micro-batch under
// ZeRO-3 as FSDP2's HSDP reduces by default, and the optimizer waits for those all-reduces.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "models/optimizer_precision.hpp"
#include "models/parallel_spec.hpp"
#include "models/step/op_emitter.hpp"
#include "models/step/step_context.hpp"

namespace wallsim::models {

struct DpSetting {
  bool active = false;  // |DP×CP| > 1
  GroupIndex group = 0;
  std::int64_t group_size = 1;
  bool distributed_optimizer = false;
  DataSharding sharding = DataSharding::kNone;  // kOptimizer or more: distributed_optimizer
  std::int64_t decoder_layers = 0;              // ParamUnit modules from here on are MTP layers
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // Gradients are bucketed only in the chunk holding the first virtual stage (as Megatron-LM's
  // DDP does: stage 0, chunk 0 in its numbering); other chunks reduce as one bucket.
  std::optional<std::int64_t> bucketed_chunk = 0;
  double grad_bytes_per_param = 4;
  // Adam step bytes per parameter of the local shard: 30 with fp32 state
  // (optimizer_step_bytes_per_param, models/optimizer_precision.hpp).
  double optimizer_step_bytes_per_param = 30;
  std::int64_t optimizer_shards = 1;
  // Hybrid sharding (parallel.fsdp_shard_group): `group` is the shard group, of
  // `shard_group_size` ranks; each gradient reduce-scatter in it is followed by an all-reduce of
  // the shard over the replica group (the same shard on the other shard groups).
  std::optional<GroupIndex> replica_group;
  std::int64_t shard_group_size = 1;
  // Tied embeddings with the embedding and the output layer on different stages, on either.
  std::optional<GroupIndex> embedding_group;
  double embedding_params = 0;
  // Routed-expert parameters (MoE) reduce and gather over expert DP, in buckets of their own.
  bool expert_active = false;  // |EDP| > 1
  GroupIndex expert_group = 0;
  std::int64_t expert_group_size = 1;
  std::int64_t expert_optimizer_shards = 1;
  // training.offload.optimizer_fraction: the share of the local shard the CPU steps
  // (models/optimizer_offload.hpp), over the host link (bytes/s per direction) with this GPU's
  // share of the host's DRAM bandwidth; `cpu_optimizer_overlap`: the copies pipeline on streams
  // of their own, one piece per parameter unit of the rank.
  double cpu_optimizer_fraction = 0;
  bool cpu_optimizer_overlap = false;
  double host_link_Bps = 0;
  double host_memory_Bps = 0;
  // training.offload.optimizer_states: the share of the shard's state staged from the host for
  // the GPU's step, in chunks of `state_chunk_mb` MiB (0: all at once), in `precision`'s dtypes.
  double staged_state_fraction = 0;
  double state_chunk_mb = 0;
  OptimizerPrecision precision;
};

// The bucket size Megatron picks: max(40M, 1M·|DP×CP|) parameters.
double default_bucket_params(std::int64_t dp_cp_size);

struct Bucket {
  std::int64_t chunk = 0;
  double params = 0;
  std::vector<std::size_t> units;  // indices in the chunk's units (backward order)
  bool expert = false;             // routed-expert parameters: expert DP
};

class DataParallelOps {
 public:
  // `chunk_units[c]`: the parameters of chunk c in backward order.
  DataParallelOps(OpEmitter& emit, const DpSetting& setting,
                  std::vector<std::vector<ParamUnit>> chunk_units);

  const std::vector<Bucket>& buckets() const { return buckets_; }

  // The chunk's first micro-batch's forward is about to run `module` of `chunk` (micro-batch 0,
  // or the first of the chunk's chain): the parameter all-gathers it
  // waits for (empty unless overlap_param_gather). Gathers dispatched now wait for
  // `issue_after` (the module's input: a pipeline receive) and the last compute op.
  Deps before_first_forward(std::int64_t chunk, std::int64_t module, const Deps& issue_after);
  // Any micro-batch's forward is about to run `module` of `chunk`: what it waits for (the
  // parameter all-gathers above for the chunk's first micro-batch, ZeRO-3's gathers for every
  // one).
  Deps before_forward(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                      const Deps& issue_after);
  // The forward of `module` has just been emitted: ZeRO-3 frees its gathered parameters when the
  // last kernel emitted ends.
  void after_forward(std::int64_t chunk, std::int64_t module);
  // The same after its backward; with sharded gradients each of the unit's buckets is
  // reduce-scattered now, as the backward hook does.
  // `grads`: the chunk's gradients so far, in backward order.
  void after_backward(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                      const std::vector<GradReady>& grads);
  // The backward of `module` is about to be emitted: ZeRO-3's gathers it waits for; with sharded
  // gradients its first kernel allocates the unit's unsharded gradient.
  Deps before_backward(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                       const Deps& issue_after);
  // The last micro-batch's backward of `chunk` has ended; `grads` match the chunk's units.
  void chunk_gradients_ready(std::int64_t chunk, const std::vector<GradReady>& grads);
  // After the schedule: deferred reductions, embedding all-reduce, optimizer, parameter gather.
  // `stage_params`: every parameter this rank holds, routed experts included.
  void finish_step(double stage_params);

 private:
  void build_buckets();
  void build_size_buckets();
  bool reduces(const Bucket& bucket) const;
  GroupIndex group_of(const Bucket& bucket) const;
  OpIndex reduce_bucket(std::size_t bucket, const std::vector<GradReady>& grads);
  // Hybrid sharding: the all-reduce over the replica group of the shard that `scatter`
  // reduce-scattered from `bytes` of gradients (nothing for expert buckets or without it).
  void reduce_replicas(const Bucket& bucket, double bytes, OpIndex scatter);
  OpIndex gather_bucket(std::size_t forward_position, const Deps& deps);
  void tag(const std::string& prefix);
  // The optimizer step of `shard` parameters after `before_step`: the fused GPU kernel, and the
  // CPU's part with its copies when the optimizer is offloaded. Returns what the parameter
  // all-gather waits for.
  Deps optimizer_step(double shard, const Deps& before_step);
  // The same with the chunked optimizer-state offload (models/optimizer_offload.hpp).
  Deps staged_optimizer_step(double shard, const Deps& before_step);
  bool shards_grads() const { return setting_.sharding >= DataSharding::kGrads; }
  bool shards_params() const { return setting_.sharding == DataSharding::kParams; }
  // The FSDP unit a parameter unit belongs to (MTP layers go with the output layer).
  std::int64_t unit_module(const ParamUnit& unit) const;
  void build_unit_buckets();
  // Positions in forward_order_ of `module`'s buckets in `chunk`.
  const std::vector<std::size_t>& module_positions(std::int64_t chunk, std::int64_t module) const;
  void index_units();
  // Reduce-scatters buckets (indices), in the order their gradients complete.
  void reduce_scatter_units(std::int64_t microbatch, std::vector<std::size_t> buckets,
                            const std::vector<GradReady>& grads);
  double module_params(std::int64_t chunk, std::int64_t module) const;
  // The unit `step` places after (+1) or before (-1) `module` in the chunk's forward order.
  std::optional<std::int64_t> neighbour_module(std::int64_t chunk, std::int64_t module,
                                               int step) const;
  // ZeRO-3: the gathers of `module` for one pass, dispatching the next unit's (`step` +1 in
  // the forward, -1 in the backward) within the chunk.
  struct PassGathers;
  Deps gather_for_pass(PassGathers& pass, std::int64_t microbatch, std::int64_t chunk,
                       std::int64_t module, int step, const Deps& issue_after);

  OpEmitter& emit_;
  DpSetting setting_;
  std::vector<std::vector<ParamUnit>> chunk_units_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> forward_order_;             // bucket indices in forward (gather) order
  std::vector<std::optional<OpIndex>> gathers_;        // by forward position
  std::vector<std::vector<GradReady>> pending_grads_;  // per chunk, without overlap
  std::vector<OpIndex> reductions_;
  std::map<std::int64_t, std::int64_t> first_forward_;  // chunk -> its first micro-batch
  // ZeRO-3: the gathers of the forward and the backward pass being emitted (EP overlap emits
  // one of each at once), by forward position; a pass is one (micro-batch, chunk).
  struct PassGathers {
    std::int64_t microbatch = -1;
    std::int64_t chunk = -1;
    std::vector<std::optional<OpIndex>> gathers;
  };
  PassGathers forward_pass_;
  PassGathers backward_pass_;
  std::vector<std::vector<std::int64_t>> unit_order_;  // per chunk: FSDP units, forward order
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::size_t>> unit_positions_;
};

}  // namespace wallsim::models
