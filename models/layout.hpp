// A validated parallel layout: the sizes of every axis, the effective switches, the number of
// micro-batches and where each layer goes.
//
// make_layout rejects impossible layouts with the reason, as Megatron-LM's argument checks
// would (heads % tp, kv_heads % tp, ffn_hidden % tp, num_gpus % (tp·cp·pp),
// global_batch % (micro_batch·dp), seq_len % (2·cp) with context parallelism, seq_len/cp % tp
// with sequence parallelism; with cp > 1: flash attention, for a2a the local heads and KV heads
// divisible by the all-to-all size, hierarchical sizes multiplying to cp; MoE: num_gpus %
// (etp·ep·pp), experts % ep, the expert FFN % etp, sequence parallelism with ep > 1 and tp > 1;
// ep = etp = 1 on dense models). Sequence parallelism without tp > 1 is switched off with a note,
// as Megatron does. Not fitting in memory is not a layout error: memory.hpp reports it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/layer_placement.hpp"
#include "models/model_spec.hpp"
#include "models/parallel_spec.hpp"
#include "models/rank_layout.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models {

struct CpLayout {
  CpCommType type = CpCommType::kP2p;
  std::int64_t a2a = 1;      // ranks in one all-to-all group
  std::int64_t p2p = 1;      // ranks in one ring
  bool load_balance = true;  // zig-zag chunks; false: contiguous, the last rank does the most
};

// The MoE grid folded over the same GPUs (Megatron's parallel folding, mechanics.md §4.2):
// ETP × EP × EDP × PP = world, the PP groups shared with the attention grid.
struct ExpertLayout {
  std::int64_t etp = 1;  // expert tensor parallelism
  std::int64_t ep = 1;   // expert parallelism
  std::int64_t edp = 1;  // expert data parallelism = world / (etp·ep·pp)
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  bool grouped_gemm = true;  // expert GEMMs as grouped kernels (Megatron --moe-grouped-gemm)
  EpGroupStyle group_style = EpGroupStyle::kMegatron;
};

struct Layout {
  ParallelSizes sizes;  // ep = 1 on the dense grid
  AxisOrder order{};
  std::int64_t vpp = 1;
  bool sequence_parallel = false;              // effective value
  CpLayout cp;                                 // meaningful when sizes.cp > 1
  ExpertLayout expert;                         // MoE models; etp = ep = 1, edp = dp·cp otherwise
  const PipelineSchedule* schedule = nullptr;  // training.schedule, or Megatron's choice by vpp
  VirtualStages virtual_stages;                // where the schedule puts each (stage, chunk)
  std::int64_t num_microbatches = 1;           // m = global_batch / (micro_batch·dp)
  // parallel.data_sharding, or what training.distributed_optimizer implies (optimizer / none).
  DataSharding data_sharding = DataSharding::kNone;
  // parallel.fsdp_shard_group: the DP×CP ranks one shard group spans (hybrid sharding), or 0:
  // the whole DP×CP group.
  std::int64_t shard_group = 0;
  LayerPlacement placement;
  std::vector<std::string> notes;  // what was adjusted, for the user

  RankLayout ranks() const { return RankLayout(sizes, order); }
  // The group the distributed optimizer shards over: DP×CP (mechanics.md §6.2).
  std::int64_t dp_cp() const { return sizes.dp * sizes.cp; }
  // The ranks sharded state is split over: the shard group with hybrid sharding, else DP×CP.
  std::int64_t dp_shards() const { return shard_group > 0 ? shard_group : dp_cp(); }
  // Copies of each shard: dp_cp() / dp_shards() (1 without hybrid sharding).
  std::int64_t dp_replicas() const { return dp_cp() / dp_shards(); }
  PipelineShape pipeline_shape() const { return {sizes.pp, vpp, num_microbatches}; }
  // The chunk of `stage` holding the first position of a chain (the embedding), or nullopt. One
  // chain's start per stage at most: a second chain (DualPipe) starts on the other end stage.
  std::optional<std::int64_t> embedding_chunk_on(std::int64_t stage) const {
    return chunk_on(virtual_stages.chain_starts(), stage);
  }
  // The chunk of `stage` holding the last position of a chain: output layer, loss and MTP.
  std::optional<std::int64_t> output_chunk_on(std::int64_t stage) const {
    return chunk_on(virtual_stages.chain_ends(), stage);
  }
  bool holds_embedding(std::int64_t stage) const { return embedding_chunk_on(stage).has_value(); }
  bool holds_output(std::int64_t stage) const { return output_chunk_on(stage).has_value(); }
  // Copies of each layer's parameters across the stages: the schedule's chains (DualPipe: 2).
  std::int64_t parameter_copies() const { return virtual_stages.chains(); }
  // Some stage holds an output layer without an embedding (pp > 1, except in a V shape, whose
  // stage 0 holds both, and DualPipe, whose end stages hold both): tied embeddings then need a
  // copy of the table for the output layer and an all-reduce of their gradients between the
  // stages.
  bool output_apart_from_embedding() const {
    for (const StageChunk& end : virtual_stages.chain_ends()) {
      if (!holds_embedding(end.stage)) return true;
    }
    return false;
  }
  // Ranks of CP's all-to-all when CP is all-to-all alone (cp_comm_type a2a), else 1.
  std::int64_t cp_a2a_only() const {
    return sizes.cp > 1 && cp.type == CpCommType::kA2a ? cp.a2a : 1;
  }

 private:
  static std::optional<std::int64_t> chunk_on(const std::vector<StageChunk>& places,
                                              std::int64_t stage) {
    for (const StageChunk& place : places) {
      if (place.stage == stage) return place.chunk;
    }
    return std::nullopt;
  }
};

// `where` names the run config file in errors.
Layout make_layout(const ModelSpec& model, const ParallelSpec& parallel,
                   const TrainingSpec& training, std::int64_t num_gpus, const std::string& where);

}  // namespace wallsim::models
