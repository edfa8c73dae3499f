// build_step: which ranks are simulated, the replay groups they use, and each rank's program
// (pipeline schedule with its layers, TP, PP and DP communication, optimizer step).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "models/activation_memory.hpp"
#include "models/expert_groups.hpp"
#include "models/flops.hpp"
#include "models/memory.hpp"
#include "models/step/attention_backend_choice.hpp"
#include "models/step/data_parallel_ops.hpp"
#include "models/step/kernel_timer.hpp"
#include "models/step/layer_ops.hpp"
#include "models/step/op_emitter.hpp"
#include "models/step/pipeline_ops.hpp"
#include "models/step/precision_support.hpp"
#include "models/step/step_context.hpp"
#include "models/step/step_program.hpp"
#include "models/wgrad_buffers.hpp"

namespace wallsim::models {
namespace {

// What a group is for. Two groups with the same members but different purposes are different
// communicators (Megatron creates one process group per purpose), each with its own order of
// collectives: with dp = 1 the DP×CP group has the CP group's members, and its gradient
// all-reduces on the DP stream must not be matched against the CP ring's exchanges.
enum class GroupPurpose {
  kTp,
  kCp,
  kCpA2a,
  kCpRing,
  kEp,
  kEtp,
  kTpEp,
  kDp,
  kDpReplica,
  kEdp,
  kEmbedding
};

// Real groups -> replay groups: each distinct real group (members and purpose) gets one index,
// listing the simulated ranks among its members and every global rank of it.
class GroupTable {
 public:
  explicit GroupTable(const std::vector<std::optional<RankIndex>>& simulated_of)
      : simulated_of_(simulated_of) {}

  GroupIndex index(const std::vector<std::int64_t>& members, GroupPurpose purpose) {
    const auto [it, added] =
        index_.emplace(std::pair(purpose, members), static_cast<GroupIndex>(groups_.size()));
    if (added) {
      std::vector<RankIndex> simulated;
      std::vector<int> ranks;
      for (std::int64_t rank : members) {
        ranks.push_back(static_cast<int>(rank));
        if (const auto sim = simulated_of_[static_cast<std::size_t>(rank)])
          simulated.push_back(*sim);
      }
      groups_.push_back(std::move(simulated));
      group_ranks_.push_back(std::move(ranks));
    }
    return it->second;
  }

  // Moves the tables into the program (the table is spent afterwards).
  void move_into(StepProgram& program) {
    program.groups = std::move(groups_);
    program.group_ranks = std::move(group_ranks_);
  }

 private:
  std::vector<std::vector<RankIndex>> groups_;
  std::vector<std::vector<int>> group_ranks_;
  const std::vector<std::optional<RankIndex>>& simulated_of_;
  std::map<std::pair<GroupPurpose, std::vector<std::int64_t>>, GroupIndex> index_;
};

// For every global rank, the group of `groups` that holds it.
std::vector<std::size_t> group_of_rank(const RankGroups& groups, std::int64_t world) {
  std::vector<std::size_t> of(static_cast<std::size_t>(world), 0);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    for (std::int64_t rank : groups[g]) of[static_cast<std::size_t>(rank)] = g;
  }
  return of;
}

struct RealGroups {
  RankGroups groups;
  std::vector<std::size_t> of_rank;
  const std::vector<std::int64_t>& of(std::int64_t rank) const {
    return groups[of_rank[static_cast<std::size_t>(rank)]];
  }
};

RealGroups real_groups(RankGroups groups, std::int64_t world) {
  RealGroups r{std::move(groups), {}};
  r.of_rank = group_of_rank(r.groups, world);
  return r;
}

// Everything the per-rank builds share.
// DualPipe's two parameter copies (models/schedules/dualpipe.cpp): stage s's data-parallel
// groups joined with those of the same coordinates on stage pp − 1 − s, which hold the other
// copy of the same layers; one group, its members first, serves both stages.
RankGroups with_mirror_stage(const RankGroups& groups, const RankLayout& ranks) {
  const std::int64_t pp = ranks.sizes().pp;
  RankGroups out;
  for (const auto& group : groups) {
    if (group.empty() || ranks.coordinates(group.front()).pp >= pp / 2) continue;
    std::vector<std::int64_t> members = group;
    for (const std::int64_t rank : group) {
      RankCoordinates mirror = ranks.coordinates(rank);
      mirror.pp = pp - 1 - mirror.pp;
      members.push_back(ranks.rank(mirror));
    }
    out.push_back(std::move(members));
  }
  return out;
}

// Hierarchical CP (mechanics.md §3.2): inside every CP group (members by CP index), the
// all-to-all groups are runs of `a2a` consecutive members and the rings take every a2a-th.
RankGroups cp_subgroups(const RankGroups& cp_groups, std::int64_t a2a, bool rings) {
  RankGroups out;
  for (const auto& group : cp_groups) {
    const auto n = static_cast<std::int64_t>(group.size());
    const std::int64_t count = rings ? a2a : n / a2a;
    for (std::int64_t k = 0; k < count; ++k) {
      std::vector<std::int64_t> members;
      for (std::int64_t i = 0; i < n; ++i) {
        if (rings ? i % a2a == k : i / a2a == k)
          members.push_back(group[static_cast<std::size_t>(i)]);
      }
      out.push_back(std::move(members));
    }
  }
  return out;
}

struct StepInputs {
  const RunConfig& config;
  RankLayout ranks;
  LayerDims dims;
  RecomputePlan recompute;
  MemoryReport memory;
  RealGroups tp, dp_cp, embedding, cp, cp_a2a, cp_ring;
  RealGroups ep, etp, tp_ep, edp;  // MoE models only
  std::vector<std::optional<RankIndex>> simulated_of;
  // Hybrid sharding: runs of dp_shards() consecutive DP×CP members, and every dp_shards()-th.
  RealGroups dp_shard, dp_replica;
};

// The MoE grid's groups as RealGroups (empty for dense models).
struct ExpertRealGroups {
  RealGroups ep, etp, tp_ep, edp;
};

ExpertRealGroups expert_real_groups(const Layout& layout, const ModelSpec& model,
                                    std::int64_t world) {
  if (!model.moe) return {};
  ExpertGroups g = expert_groups(layout);
  return {real_groups(std::move(g.ep), world), real_groups(std::move(g.etp), world),
          real_groups(std::move(g.tp_ep), world), real_groups(std::move(g.edp), world)};
}

LayerMemory layer_memory(const RunConfig& c, std::int64_t stage) {
  ActivationSetting s = activation_setting(c.training, c.layout.sizes.tp, c.layout.sizes.cp,
                                           c.layout.sequence_parallel);
  s.ep = c.layout.expert.ep;
  s.etp = c.layout.expert.etp;
  s.cp_a2a = c.layout.cp_a2a_only();
  LayerMemory m;
  m.layer_bytes = layer_activation_bytes(c.model, s);
  m.moe_layer_bytes = m.layer_bytes;
  if (c.model.moe) {
    const std::int64_t first_moe = c.model.moe->first_dense_layers;
    m.moe_layer_bytes = layer_activation_bytes(c.model, s, first_moe);
  }
  if (c.training.recompute == Recompute::full) {
    m.transient_bytes = layer_recompute_transient_bytes(c.model, s);
  }
  if (c.layout.holds_embedding(stage)) {
    m.embedding_bytes = embedding_activation_bytes(c.model, s);
    m.embedding_grad_bytes = embedding_grad_bytes(c.model, c.layout, stage);
  }
  if (c.layout.holds_output(stage)) {
    m.output_bytes = output_activation_bytes(c.model, s);
    m.output_placeholder_bytes = output_wgrad_placeholder_bytes(c.model, c.layout, stage);
  }
  return m;
}

// Parameter units of every chunk of the stage, in backward (bucketing) order.
std::vector<std::vector<ParamUnit>> chunk_units(const LayerOps& layers, const Layout& layout,
                                                std::int64_t stage) {
  const StageLayers& placed = layout.placement.stages[static_cast<std::size_t>(stage)];
  std::vector<std::vector<ParamUnit>> units(placed.chunks.size());
  for (std::size_t c = 0; c < placed.chunks.size(); ++c) {
    auto& chunk = units[c];
    const auto append = [&chunk](const std::vector<ParamUnit>& more) {
      chunk.insert(chunk.end(), more.begin(), more.end());
    };
    if (layout.virtual_stages.last(stage, static_cast<std::int64_t>(c))) {
      append(layers.mtp_units());
      append(layers.output_units());
    }
    const ChunkLayers& range = placed.chunks[c];
    for (std::int64_t l = range.first_layer + range.count; l-- > range.first_layer;) {
      append(layers.layer_units(l));
    }
    if (layout.virtual_stages.first(stage, static_cast<std::int64_t>(c))) {
      append(layers.embedding_units());
    }
  }
  return units;
}

double unit_parameters(const std::vector<std::vector<ParamUnit>>& chunks) {
  double total = 0;
  for (const auto& chunk : chunks) {
    for (const ParamUnit& unit : chunk) total += unit.params;
  }
  return total;
}

TpSetting tp_setting(const StepInputs& in, GroupTable& table, std::int64_t rank) {
  const Layout& layout = in.config.layout;
  TpSetting tp;
  tp.tp = layout.sizes.tp;
  tp.active = tp.tp > 1;
  tp.sequence_parallel = layout.sequence_parallel;
  tp.overlap = in.config.training.overlap.tp_comm && layout.sequence_parallel;
  if (tp.active) tp.group = table.index(in.tp.of(rank), GroupPurpose::kTp);
  return tp;
}

CpSetting cp_setting(const StepInputs& in, GroupTable& table, std::int64_t rank) {
  const Layout& layout = in.config.layout;
  CpSetting cp;
  cp.cp = layout.sizes.cp;
  cp.active = cp.cp > 1;
  cp.layout = layout.cp;
  cp.overlap = in.config.training.overlap.cp_comm;
  if (!cp.active) return cp;
  cp.cp_position = in.ranks.coordinates(rank).cp;
  cp.ring_position = cp.cp_position / layout.cp.a2a;
  cp.cp_group = table.index(in.cp.of(rank), GroupPurpose::kCp);
  if (layout.cp.a2a > 1) cp.a2a_group = table.index(in.cp_a2a.of(rank), GroupPurpose::kCpA2a);
  if (layout.cp.p2p > 1) cp.ring_group = table.index(in.cp_ring.of(rank), GroupPurpose::kCpRing);
  return cp;
}

MoeSetting moe_setting(const StepInputs& in, GroupTable& table, std::int64_t rank) {
  const Layout& layout = in.config.layout;
  MoeSetting moe;
  moe.active = in.config.model.is_moe();
  if (!moe.active) return moe;
  moe.ep = layout.expert.ep;
  moe.etp = layout.expert.etp;
  moe.dispatcher = layout.expert.dispatcher;
  moe.grouped_gemm = layout.expert.grouped_gemm;
  moe.shared_expert_overlap = in.config.training.overlap.shared_expert;
  const bool alltoall = moe.dispatcher == MoeDispatcher::kAllToAll;
  if (alltoall) {
    moe.ep_group = table.index(in.ep.of(rank), GroupPurpose::kEp);
    if (moe.etp > 1) moe.etp_group = table.index(in.etp.of(rank), GroupPurpose::kEtp);
    moe.counts_gather = !in.config.model.moe->capacity_factor && moe.ep * moe.etp > 1;
    if (moe.counts_gather) moe.tp_ep_group = table.index(in.tp_ep.of(rank), GroupPurpose::kTpEp);
  } else {
    const auto& members = in.tp_ep.of(rank);
    moe.tp_ep_group = table.index(members, GroupPurpose::kTpEp);
    std::set<std::int64_t> domains;
    for (std::int64_t r : members) domains.insert(r / in.config.cluster.gpus_per_domain());
    moe.tp_ep_domains = static_cast<std::int64_t>(domains.size());
  }
  return moe;
}

// The group renames of MoE settings `built` → `rank` (alltoall: EP and ETP; others: ETP×EP).
void bind_moe(const MoeSetting& built, const MoeSetting& rank, OpBinding& binding) {
  if (!rank.active) return;
  if (rank.dispatcher == MoeDispatcher::kAllToAll) {
    binding.groups.emplace_back(built.ep_group, rank.ep_group);
    if (rank.etp > 1) binding.groups.emplace_back(built.etp_group, rank.etp_group);
    if (rank.counts_gather) binding.groups.emplace_back(built.tp_ep_group, rank.tp_ep_group);
  } else {
    binding.groups.emplace_back(built.tp_ep_group, rank.tp_ep_group);
  }
}

DpSetting dp_setting(const StepInputs& in, GroupTable& table, std::int64_t rank,
                     std::int64_t stage) {
  const Layout& layout = in.config.layout;
  const TrainingSpec& training = in.config.training;
  DpSetting dp;
  dp.group_size = layout.dp_cp() * layout.parameter_copies();
  dp.active = dp.group_size > 1;
  if (layout.shard_group > 0) {
    dp.group = table.index(in.dp_shard.of(rank), GroupPurpose::kDp);
    dp.replica_group = table.index(in.dp_replica.of(rank), GroupPurpose::kDpReplica);
    dp.shard_group_size = layout.dp_shards();
  } else if (dp.active) {
    dp.group = table.index(in.dp_cp.of(rank), GroupPurpose::kDp);
  }
  dp.distributed_optimizer = training.distributed_optimizer;
  dp.sharding = layout.data_sharding;
  dp.decoder_layers = in.config.model.layers;
  dp.overlap_grad_reduce = training.overlap.dp_grad_reduce;
  dp.overlap_param_gather = training.overlap.dp_param_gather;
  dp.bucketed_chunk = std::nullopt;
  dp.bucketed_chunk = layout.embedding_chunk_on(stage);
  dp.grad_bytes_per_param = static_bytes_per_param(layout, training).grads;
  dp.optimizer_step_bytes_per_param =
      optimizer_step_bytes_per_param(training.optimizer, dp.grad_bytes_per_param);
  dp.optimizer_shards = optimizer_shards(layout, training);
  if (in.config.model.is_moe()) {
    dp.expert_group_size = layout.expert.edp * layout.parameter_copies();
    dp.expert_active = dp.expert_group_size > 1;
    if (dp.expert_active) dp.expert_group = table.index(in.edp.of(rank), GroupPurpose::kEdp);
    dp.expert_optimizer_shards = training.distributed_optimizer ? dp.expert_group_size : 1;
  }
  dp.staged_state_fraction = training.offload_optimizer_states;
  dp.state_chunk_mb = training.offload_optimizer_state_chunk_mb;
  dp.precision = training.optimizer;
  if (dp.staged_state_fraction > 0) dp.host_link_Bps = in.config.cluster.host_link_GBps * 1e9;
  dp.cpu_optimizer_fraction = training.offload_optimizer_fraction;
  if (dp.cpu_optimizer_fraction > 0) {
    const auto& cluster = in.config.cluster;
    dp.cpu_optimizer_overlap = training.offload_optimizer_overlap;
    dp.host_link_Bps = cluster.host_link_GBps * 1e9;
    dp.host_memory_Bps = cluster.host_memory_GBps.value_or(0) * 1e9 / cluster.gpus_per_node;
  }
  const bool edge = layout.holds_embedding(stage) || layout.holds_output(stage);
  if (in.config.model.tied_embeddings && layout.output_apart_from_embedding() && edge) {
    dp.embedding_group = table.index(in.embedding.of(rank), GroupPurpose::kEmbedding);
    dp.embedding_params = static_cast<double>(in.dims.vocab / in.dims.tp * in.dims.hidden);
  }
  return dp;
}

PipelineSetting pipeline_setting(const StepInputs& in, std::int64_t rank) {
  const Layout& layout = in.config.layout;
  const RankCoordinates coordinates = in.ranks.coordinates(rank);
  PipelineSetting p;
  p.schedule = layout.schedule;
  p.shape = layout.pipeline_shape();
  p.virtual_stages = layout.virtual_stages;
  p.stage = coordinates.pp;
  for (std::int64_t stage = 0; stage < layout.sizes.pp; ++stage) {
    RankCoordinates peer = coordinates;
    peer.pp = stage;
    p.stage_ranks.push_back(*in.simulated_of[static_cast<std::size_t>(in.ranks.rank(peer))]);
  }
  p.transfer_bytes = 2.0 * in.dims.sharded_hidden_elements();
  p.mtp = in.config.model.mtp_layers > 0;
  p.ep_overlap = in.config.model.is_moe() && in.config.training.overlap.ep_comm;
  if (in.config.training.offload_activations) {
    p.offload_bytes = offloaded_layer_bytes(in.config.model, layout, in.config.training);
    p.host_link_Bps = in.config.cluster.host_link_GBps * 1e9;
    p.offload_layers = in.config.training.offload_layers;
  }
  return p;
}

// Megatron's model FLOPs for the tokens this rank processes: its stage's layers (dense or MoE
// FFN as placed) ÷ tp, plus where a chain ends the logits and the MTP block. Each chunk sees the
// micro-batches of its chain (all of them with one chain).
double rank_model_flops(const RunConfig& c, std::int64_t stage) {
  const ModelSpec& m = c.model;
  const std::int64_t tp = c.layout.sizes.tp;
  const double tokens = static_cast<double>(c.layout.num_microbatches * c.training.micro_batch) /
                        static_cast<double>(c.layout.parameter_copies()) *
                        static_cast<double>(c.training.seq_len / c.layout.sizes.cp);
  const double attention =
      attention_linear_flops_per_token(m) + attention_core_flops_per_token(m, c.training.seq_len);
  double per_token = 0;
  for (const ChunkLayers& chunk :
       c.layout.placement.stages[static_cast<std::size_t>(stage)].chunks) {
    for (std::int64_t l = chunk.first_layer; l < chunk.first_layer + chunk.count; ++l) {
      per_token += attention + layer_mlp_flops_per_token(m, l);
    }
  }
  double flops = tokens * per_token;
  if (c.layout.holds_output(stage)) {
    // The output layer, and each MTP layer (typed like the last decoder layer) with its
    // projection and logits.
    const double mtp = static_cast<double>(m.mtp_layers);
    flops += tokens * (1.0 + mtp) * logits_flops_per_token(m, tp);
    flops += tokens * mtp *
             (attention + layer_mlp_flops_per_token(m, m.layers - 1) +
              mtp_projection_flops_per_token(m));
  }
  return flops / static_cast<double>(tp);
}

// `room`: the ops and edges to reserve (a size hint; the graph grows past it when needed).
OpGraph build_rank(const StepInputs& in, std::int64_t rank, KernelTimer& timer,
                   PayloadTable& payloads, GroupTable& groups,
                   std::pair<std::size_t, std::size_t> room) {
  const RunConfig& c = in.config;
  const std::int64_t stage = in.ranks.coordinates(rank).pp;
  const StageMemory& memory = in.memory.stages[static_cast<std::size_t>(stage)];
  OpGraph graph;
  graph.reserve(room.first, room.second);
  graph.static_bytes =
      memory.weights + memory.grads + memory.optimizer + memory.buffers + memory.wgrad_placeholders;
  OpEmitter emit(graph, timer, payloads, c.training.precision, c.training.quantization);
  emit.set_host_issue({timer.profile().host, c.training.cuda_graphs});
  const bool output_weights = c.layout.holds_output(stage) &&
                              (!c.model.tied_embeddings || c.layout.output_apart_from_embedding());
  // Groups are registered in this order: tp, cp, dp (binding_between relies on it).
  const TpSetting tp = tp_setting(in, groups, rank);
  const CpSetting cp = cp_setting(in, groups, rank);
  const MoeSetting moe = moe_setting(in, groups, rank);
  LayerOps layers(emit, in.dims, tp, cp, in.recompute, layer_memory(c, stage), output_weights,
                  c.model.moe, moe);
  DataParallelOps data_parallel(emit, dp_setting(in, groups, rank, stage),
                                chunk_units(layers, c.layout, stage));
  PipelineOps pipeline(emit, layers, data_parallel, pipeline_setting(in, rank),
                       c.layout.placement.stages[static_cast<std::size_t>(stage)]);
  pipeline.emit_schedule();
  data_parallel.finish_step(c.model.is_moe() ? unit_parameters(chunk_units(layers, c.layout, stage))
                                             : stage_parameters(c.model, c.layout, stage).total());
  graph.release_spare_room();
  return graph;
}

// Ranks run one program when they share a stage, except where CP positions attend differently:
// the contiguous split gives every position its own amount of work, and a balanced p2p ring its
// own block shapes per step (cp_attention.hpp: keys from earlier ranks meet all the queries and
// half the keys, keys from later ranks half the queries and all the keys).
bool cp_positions_differ(const Layout& layout) {
  return layout.sizes.cp > 1 && (!layout.cp.load_balance || layout.cp.p2p > 1);
}

std::int64_t program_class(const Layout& layout, const RankCoordinates& coordinates) {
  const std::int64_t positions = cp_positions_differ(layout) ? layout.sizes.cp : 1;
  return coordinates.pp * positions + (positions > 1 ? coordinates.cp : 0);
}

std::vector<std::int64_t> simulated_ranks(const Layout& layout, const RankLayout& ranks,
                                          Fidelity fidelity) {
  std::vector<std::int64_t> chosen;
  if (fidelity == Fidelity::kFull) {
    for (std::int64_t r = 0; r < ranks.world_size(); ++r) chosen.push_back(r);
    return chosen;
  }
  const std::int64_t positions = cp_positions_differ(layout) ? layout.sizes.cp : 1;
  for (std::int64_t stage = 0; stage < ranks.sizes().pp; ++stage) {
    for (std::int64_t position = 0; position < positions; ++position) {
      RankCoordinates representative;
      representative.pp = stage;
      representative.cp = position;
      chosen.push_back(ranks.rank(representative));
    }
  }
  return chosen;
}

// The ranks each simulated rank stands for (same class), as offsets from it.
std::vector<std::vector<int>> class_offsets(const Layout& layout, const RankLayout& ranks,
                                            const std::vector<std::int64_t>& simulated,
                                            Fidelity fidelity) {
  std::vector<std::vector<int>> offsets(simulated.size(), std::vector<int>{0});
  if (fidelity == Fidelity::kFull) return offsets;
  std::map<std::int64_t, std::size_t> index_of_class;
  for (std::size_t i = 0; i < simulated.size(); ++i) {
    index_of_class[program_class(layout, ranks.coordinates(simulated[i]))] = i;
  }
  for (std::int64_t r = 0; r < ranks.world_size(); ++r) {
    const std::size_t i = index_of_class.at(program_class(layout, ranks.coordinates(r)));
    if (r != simulated[i]) offsets[i].push_back(static_cast<int>(r - simulated[i]));
  }
  return offsets;
}

struct StageTemplate {
  std::int64_t rank = 0;  // global rank the graph was built for
  OpGraph graph;
  double hardware_flops = 0;
};

// The renames that turn `built`'s program into `rank`'s (same class): its TP, CP, DP×CP (shard
// and replica groups with hybrid sharding) and embedding groups and its pipeline neighbours.
// Registers `rank`'s groups in the table in the order build_rank would, so group indices do not
// depend on the sharing.
OpBinding binding_between(const StepInputs& in, GroupTable& groups, std::int64_t built,
                          std::int64_t rank) {
  OpBinding binding;
  const std::int64_t stage = in.ranks.coordinates(rank).pp;
  const TpSetting tp_built = tp_setting(in, groups, built);
  const TpSetting tp = tp_setting(in, groups, rank);
  if (tp.active) binding.groups.emplace_back(tp_built.group, tp.group);
  const CpSetting cp_built = cp_setting(in, groups, built);
  const CpSetting cp = cp_setting(in, groups, rank);
  if (cp.active) {
    binding.groups.emplace_back(cp_built.cp_group, cp.cp_group);
    if (in.config.layout.cp.a2a > 1) binding.groups.emplace_back(cp_built.a2a_group, cp.a2a_group);
    if (in.config.layout.cp.p2p > 1) {
      binding.groups.emplace_back(cp_built.ring_group, cp.ring_group);
    }
  }
  bind_moe(moe_setting(in, groups, built), moe_setting(in, groups, rank), binding);
  const DpSetting dp_built = dp_setting(in, groups, built, stage);
  const DpSetting dp = dp_setting(in, groups, rank, stage);
  if (dp.active) binding.groups.emplace_back(dp_built.group, dp.group);
  if (dp.replica_group) binding.groups.emplace_back(*dp_built.replica_group, *dp.replica_group);
  if (dp.expert_active) binding.groups.emplace_back(dp_built.expert_group, dp.expert_group);
  if (dp.embedding_group)
    binding.groups.emplace_back(*dp_built.embedding_group, *dp.embedding_group);
  const PipelineSetting p_built = pipeline_setting(in, built);
  const PipelineSetting p = pipeline_setting(in, rank);
  for (const std::int64_t neighbour : p.neighbour_stages()) {
    binding.peers.emplace_back(p_built.stage_ranks[static_cast<std::size_t>(neighbour)],
                               p.stage_ranks[static_cast<std::size_t>(neighbour)]);
  }
  return binding;
}

double graph_flops(const OpGraph& graph) {
  double flops = 0;
  for (OpIndex i = 0; i < graph.size(); ++i) flops += graph.shared_op(i).flops;
  return flops;
}

}  // namespace

std::vector<std::int64_t> simulated_global_ranks(const Layout& layout, Fidelity fidelity) {
  return simulated_ranks(layout, layout.ranks(), fidelity);
}

StepProgram build_step(const RunConfig& config, const GpuModel& gpu, Fidelity fidelity) {
  const RankLayout ranks = config.layout.ranks();
  const std::int64_t world = ranks.world_size();
  StepInputs in{
      config,
      ranks,
      layer_dims(config),
      recompute_plan(config.training),
      memory_report(config.model, config.layout, config.training, gpu.profile().hbm_bytes,
                    gpu.profile().compute_capability),
      real_groups(ranks.groups({Axis::tp}), world),
      real_groups(ranks.groups({Axis::dp, Axis::cp}), world),
      real_groups(ranks.embedding_groups(), world),
      real_groups(ranks.groups({Axis::cp}), world),
      real_groups(cp_subgroups(ranks.groups({Axis::cp}), config.layout.cp.a2a, false), world),
      real_groups(cp_subgroups(ranks.groups({Axis::cp}), config.layout.cp.a2a, true), world),
      {},
      {},
      {},
      {},
      std::vector<std::optional<RankIndex>>(static_cast<std::size_t>(world)),
      {},
      {}};
  ExpertRealGroups experts = expert_real_groups(config.layout, config.model, world);
  in.ep = std::move(experts.ep);
  in.etp = std::move(experts.etp);
  in.tp_ep = std::move(experts.tp_ep);
  in.edp = std::move(experts.edp);
  if (config.layout.parameter_copies() > 1) {
    in.dp_cp = real_groups(with_mirror_stage(in.dp_cp.groups, ranks), world);
    in.edp = real_groups(with_mirror_stage(in.edp.groups, ranks), world);
  }
  if (config.layout.shard_group > 0) {
    const RankGroups dp_cp = ranks.groups({Axis::dp, Axis::cp});
    in.dp_shard = real_groups(cp_subgroups(dp_cp, config.layout.dp_shards(), false), world);
    in.dp_replica = real_groups(cp_subgroups(dp_cp, config.layout.dp_shards(), true), world);
  }
  StepProgram program;
  program.global_rank = simulated_ranks(config.layout, ranks, fidelity);
  for (std::size_t i = 0; i < program.global_rank.size(); ++i) {
    in.simulated_of[static_cast<std::size_t>(program.global_rank[i])] = static_cast<RankIndex>(i);
  }
  check_precision_supported(config.training, gpu.profile(), config.file);
  const AttentionBackend attention =
      resolve_attention_backend(config.training, config.model, gpu.profile(), config.file);
  KernelTimer timer(gpu, fused_kernel(attention));
  PayloadTable payloads;
  GroupTable groups(in.simulated_of);
  // Ranks of one class run one program on different groups and peers: the first rank of each
  // class is built, the others share its graph under their own names (OpGraph::rebound).
  std::map<std::int64_t, StageTemplate> templates;
  // Programs of one run differ little in size (stages hold a layer more or less, the first and
  // last the embedding and the output layer), so each is built into room for half as much
  // again as the largest built before it: the ops are not moved as the vectors grow.
  std::pair<std::size_t, std::size_t> room{0, 0};
  for (std::int64_t rank : program.global_rank) {
    const std::int64_t stage = ranks.coordinates(rank).pp;
    const std::int64_t program_id = program_class(config.layout, ranks.coordinates(rank));
    auto found = templates.find(program_id);
    if (found == templates.end()) {
      StageTemplate t{rank, build_rank(in, rank, timer, payloads, groups, room), 0};
      t.hardware_flops = graph_flops(t.graph);
      room.first = std::max(room.first, t.graph.size() + t.graph.size() / 2);
      room.second = std::max(room.second, t.graph.edge_count() + t.graph.edge_count() / 2);
      found = templates.emplace(program_id, std::move(t)).first;
      program.graphs.push_back(found->second.graph.rebound({}));
    } else {
      const StageTemplate& t = found->second;
      program.graphs.push_back(t.graph.rebound(binding_between(in, groups, t.rank, rank)));
    }
    program.stage.push_back(stage);
    program.model_flops.push_back(rank_model_flops(config, stage));
    program.hardware_flops.push_back(found->second.hardware_flops);
  }
  groups.move_into(program);
  program.payloads = payloads.release();
  program.class_offsets = class_offsets(config.layout, ranks, program.global_rank, fidelity);
  program.memory = std::move(in.memory);
  return program;
}

}  // namespace wallsim::models
