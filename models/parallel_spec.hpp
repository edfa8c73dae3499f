// The `parallel` section of a run config: how the job is split over GPUs.
//
// Keys and defaults (models/README.md): tp 1, sequence_parallel false, cp 1, cp_comm_type
// "p2p", hierarchical_cp (a2a+p2p only: [a2a_size, p2p_size]), cp_load_balance true, pp 1, vpp 1,
// first_stage_layers / last_stage_layers (Megatron's --decoder-first/last-pipeline-num-layers;
// absent = even split) or pipeline_layout (Megatron's --pipeline-model-parallel-layout,
// models/pipeline_layout.hpp; its stage count / pp is vpp), ep 1, etp 1, moe_dispatcher "alltoall",
// moe_grouped_gemm true (MoE models only), ep_group_style "megatron", order "tp-cp-ep-dp-pp", dp
// (optional; must equal num_gpus / (tp·cp·pp)), data_sharding (absent: "optimizer" with
// training.distributed_optimizer, "none" without), fsdp_shard_group (absent: every DP×CP rank;
// hybrid sharding: shard over groups of this many consecutive DP×CP ranks, replicate across
// them).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/pipeline_layout.hpp"

namespace wallsim {

class JsonNode;

namespace models {

// The five axes of Megatron's RankGenerator.
enum class Axis { tp, cp, ep, dp, pp };
const char* to_string(Axis axis);

// How MoE tokens reach their experts (Megatron-Core's --moe-token-dispatcher-type;
// models/step/moe_ops.hpp): an all-to-all over EP, an all-gather over ETP×EP, or one exchange
// that sends a token to each NVLink domain once.
enum class MoeDispatcher { kAllToAll, kAllGather, kFlex };
const char* to_string(MoeDispatcher dispatcher);  // "alltoall", "allgather", "flex"
// The inverse of to_string; nullopt for any other spelling.
std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name);
// Whether Megatron-Core can run the shared experts beside this dispatcher's exchanges
// (moe_shared_expert_overlap: alltoall and flex, not allgather; transformer_config.py).
inline bool overlaps_shared_experts(MoeDispatcher dispatcher) {
  return dispatcher != MoeDispatcher::kAllGather;
}

// The CP attention exchange (docs/reference/mechanics.md §3.2): the p2p ring of KV blocks, one
// all-gather of KV, Ulysses all-to-alls, or all-to-alls inside groups of `a2a` ranks with a ring
// over the `p2p` groups (a2a·p2p = cp; p2p alone: a2a = 1, p2p = cp; a2a alone: a2a = cp).
enum class CpCommType { kP2p, kAllGather, kA2a, kA2aP2p };
const char* to_string(CpCommType type);  // "p2p", "all_gather", "a2a", "a2a+p2p"

// How expert-parallel groups are laid over the ranks (models/expert_groups.hpp).
enum class EpGroupStyle { kMegatron, kDeepSpeed };
const char* to_string(EpGroupStyle style);  // "megatron", "deepspeed"

// What the data-parallel group shards (ZeRO stages; Megatron-FSDP's
// --data-parallel-sharding-strategy no_shard | optim | optim_grads | optim_grads_params):
// nothing (DDP), the optimizer state (ZeRO-1, Megatron's distributed optimizer), also the
// gradients (ZeRO-2), also the parameters (ZeRO-3 / FSDP). models/step/data_parallel_ops.hpp
// says what each one communicates and when.
enum class DataSharding { kNone, kOptimizer, kGrads, kParams };
const char* to_string(DataSharding sharding);  // "none", "optimizer", "grads", "params"
std::optional<DataSharding> parse_data_sharding(std::string_view name);

// Axes listed from the smallest stride to the largest (Megatron's `order`).
using AxisOrder = std::array<Axis, 5>;

struct ParallelSpec {
  std::int64_t tp = 1;
  bool sequence_parallel = false;  // as requested; the effective value lives in Layout
  std::int64_t cp = 1;
  CpCommType cp_comm_type = CpCommType::kP2p;
  // a2a+p2p only: {a2a_size, p2p_size}, multiplying to cp.
  std::optional<std::array<std::int64_t, 2>> hierarchical_cp;
  bool cp_load_balance = true;
  std::int64_t pp = 1;
  std::int64_t vpp = 1;
  std::optional<std::int64_t> first_stage_layers;
  std::optional<std::int64_t> last_stage_layers;
  std::optional<std::string> pipeline_layout;  // as written
  std::vector<LayoutStage> layout_stages;      // parsed; checked against the model in make_layout
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAllToAll;
  // Megatron-Core's --moe-grouped-gemm; only when the config states it (MoE models only).
  std::optional<bool> moe_grouped_gemm;
  EpGroupStyle ep_group_style = EpGroupStyle::kMegatron;
  AxisOrder order{Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};
  std::optional<std::int64_t> dp;  // only when the config states it
  // Only when the config states it; the run config reconciles it with
  // training.distributed_optimizer (Layout::data_sharding is the effective value).
  std::optional<DataSharding> data_sharding;
  // parallel.fsdp_shard_group: hybrid sharding (HSDP; Megatron's distributed-optimizer instances,
  // --num-distributed-optimizer-instances = dp·cp / this). Only when the config states it.
  std::optional<std::int64_t> fsdp_shard_group;
};

// Parses "tp-cp-ep-dp-pp"-style orders: each of the five axes exactly once.
AxisOrder parse_axis_order(const JsonNode& node);

ParallelSpec parse_parallel_spec(const JsonNode& node);

}  // namespace models
}  // namespace wallsim
