#include "models/layout.hpp"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "models/pipeline_layout.hpp"

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

std::string str(std::int64_t value) {
  return std::to_string(value);
}

void require(bool ok, const std::string& where, const std::string& path, std::int64_t value,
             const std::string& problem) {
  if (!ok) throw InputError(where, path, str(value), problem);
}

ParallelSizes derive_sizes(const ParallelSpec& p, std::int64_t num_gpus, const std::string& where) {
  const std::int64_t model_parallel = p.tp * p.cp * p.pp;
  require(num_gpus % model_parallel == 0, where, "num_gpus", num_gpus,
          "must be a multiple of tp·cp·pp = " + str(p.tp) + "·" + str(p.cp) + "·" + str(p.pp) +
              " = " + str(model_parallel));
  ParallelSizes sizes{p.tp, p.cp, 1, num_gpus / model_parallel, p.pp};
  if (p.dp) {
    require(*p.dp == sizes.dp, where, "parallel.dp", *p.dp,
            "must equal num_gpus / (tp·cp·pp) = " + str(sizes.dp) + " (or be left out)");
  }
  return sizes;
}

void check_model_split(const ModelSpec& m, const ParallelSpec& p, const std::string& where) {
  require(m.heads % p.tp == 0, where, "parallel.tp", p.tp,
          "must divide the attention heads (" + str(m.heads) + ")");
  require(m.kv_heads % p.tp == 0, where, "parallel.tp", p.tp,
          "must divide the key/value heads (kv_heads = " + str(m.kv_heads) + ")");
  require(m.ffn_hidden % p.tp == 0, where, "parallel.tp", p.tp,
          "must divide ffn_hidden (" + str(m.ffn_hidden) + ")");
}

void check_batch(const TrainingSpec& t, const ParallelSizes& sizes, const std::string& where) {
  const std::int64_t per_step = t.micro_batch * sizes.dp;
  require(t.global_batch % per_step == 0, where, "training.global_batch", t.global_batch,
          "must be a multiple of micro_batch·dp = " + str(t.micro_batch) + "·" + str(sizes.dp) +
              " = " + str(per_step));
}

void check_sequence(const TrainingSpec& t, const ParallelSizes& sizes, bool sequence_parallel,
                    bool cp_load_balance, const std::string& where) {
  // Load-balanced CP cuts the sequence into 2·cp chunks (Megatron get_batch_on_this_cp_rank);
  // the contiguous split into cp.
  if (sizes.cp > 1) {
    const std::int64_t chunks = cp_load_balance ? 2 * sizes.cp : sizes.cp;
    require(t.seq_len % chunks == 0, where, "training.seq_len", t.seq_len,
            "must be a multiple of " + std::string(cp_load_balance ? "2·cp = " : "cp = ") +
                str(chunks) + " with context parallelism");
  }
  if (sequence_parallel) {
    require(
        (t.seq_len / sizes.cp) % sizes.tp == 0, where, "training.seq_len", t.seq_len,
        "seq_len / cp must be a multiple of tp = " + str(sizes.tp) + " with sequence parallelism");
  }
}

// Transformer Engine's CP attention (mechanics.md §3.2): fused attention only; Ulysses needs the
// local heads and KV heads (already ÷ tp) divisible by the all-to-all size.
CpLayout check_context(const ModelSpec& m, const ParallelSpec& p, const TrainingSpec& t,
                       const std::string& where) {
  CpLayout cp;
  cp.type = p.cp_comm_type;
  cp.load_balance = p.cp_load_balance;
  cp.p2p = p.cp;
  if (cp.type == CpCommType::kA2a) {
    cp.a2a = p.cp;
    cp.p2p = 1;
  } else if (cp.type == CpCommType::kA2aP2p) {
    cp.a2a = (*p.hierarchical_cp)[0];
    cp.p2p = (*p.hierarchical_cp)[1];
    require(
        cp.a2a * cp.p2p == p.cp, where, "parallel.hierarchical_cp", cp.a2a * cp.p2p,
        "a2a_size·p2p_size = " + str(cp.a2a) + "·" + str(cp.p2p) + " must equal cp = " + str(p.cp));
  }
  if (p.cp == 1) return cp;
  if (!t.flash_attention) {
    throw InputError(where, "training.attention_backend", "unfused",
                     "context parallelism (cp = " + str(p.cp) +
                         ") runs on fused attention only: choose cudnn, flash2 or flash3, or "
                         "leave training.flash_attention at true");
  }
  if (cp.a2a > 1) {
    const std::string what = cp.type == CpCommType::kA2a ? "cp" : "the a2a size";
    require((m.heads / p.tp) % cp.a2a == 0, where, "parallel.cp", p.cp,
            what + " (" + str(cp.a2a) + ") must divide the heads per TP rank (" +
                str(m.heads / p.tp) + ") for all-to-all context parallelism");
    require((m.kv_heads / p.tp) % cp.a2a == 0, where, "parallel.cp", p.cp,
            what + " (" + str(cp.a2a) + ") must divide the key/value heads per TP rank (" +
                str(m.kv_heads / p.tp) + ") for all-to-all context parallelism");
  }
  return cp;
}

// Megatron-LM's parallel_state.initialize_model_parallel: with the order not ending in pp the
// attention and MoE grids must have the same data-parallel size, and in any case their pipeline
// groups must be the same (a stage holds a layer's attention and its experts; otherwise an MoE
// layer's all-to-all would span ranks of several stages).
void check_expert_pipeline(const ParallelSpec& p, const ExpertLayout& e, std::int64_t num_gpus,
                           const std::string& where) {
  const std::int64_t dp = num_gpus / (p.tp * p.cp * p.pp);
  std::string order;
  for (const Axis axis : p.order)
    order += (order.empty() ? "" : "-") + std::string(to_string(axis));
  if (p.order.back() != Axis::pp && e.edp != dp) {
    throw InputError(where, "parallel.order", order,
                     "when pp is not the last axis, the attention layers' data parallelism (" +
                         str(dp) + ") and the experts' (" + str(e.edp) +
                         ") must be the same (as Megatron-LM requires)");
  }
  const auto pipeline_groups = [&](const ParallelSizes& sizes) {
    RankGroups groups = RankLayout(sizes, p.order).groups({Axis::pp});
    std::sort(groups.begin(), groups.end());
    return groups;
  };
  if (pipeline_groups({p.tp, p.cp, 1, dp, p.pp}) !=
      pipeline_groups({e.etp, 1, e.ep, e.edp, p.pp})) {
    throw InputError(where, "parallel.order", order,
                     "puts the experts' pipeline stages on other ranks than the attention "
                     "layers' (Megatron-LM requires the same pipeline groups): put pp last, as "
                     "in the default tp-cp-ep-dp-pp");
  }
}

// The MoE grid (mechanics.md §4.2, parallel folding): ETP × EP × EDP × PP over the same world.
ExpertLayout check_experts(const ModelSpec& m, const ParallelSpec& p, std::int64_t num_gpus,
                           bool sequence_parallel, const std::string& where) {
  ExpertLayout e;
  e.etp = p.etp;
  e.ep = p.ep;
  e.dispatcher = p.moe_dispatcher;
  e.group_style = p.ep_group_style;
  e.grouped_gemm = p.moe_grouped_gemm.value_or(true);
  if (!m.moe) {
    if (p.moe_grouped_gemm) {
      throw InputError(where, "parallel.moe_grouped_gemm", *p.moe_grouped_gemm ? "true" : "false",
                       "only applies to MoE models (model.moe): a dense model has no experts");
    }
    require(p.ep == 1, where, "parallel.ep", p.ep,
            "must be 1 for dense models (expert parallelism needs model.moe)");
    require(p.etp == 1, where, "parallel.etp", p.etp,
            "must be 1 for dense models (expert parallelism needs model.moe)");
    e.edp = num_gpus / (p.pp * p.tp);  // dp·cp: no expert parameters to shard
    return e;
  }
  const std::int64_t expert_parallel = p.etp * p.ep * p.pp;
  require(num_gpus % expert_parallel == 0, where, "parallel.ep", p.ep,
          "num_gpus must be a multiple of etp·ep·pp = " + str(p.etp) + "·" + str(p.ep) + "·" +
              str(p.pp) + " = " + str(expert_parallel));
  require(m.moe->experts % p.ep == 0, where, "parallel.ep", p.ep,
          "must divide the experts (" + str(m.moe->experts) + ")");
  require(m.moe->ffn_hidden % p.etp == 0, where, "parallel.etp", p.etp,
          "must divide the expert ffn_hidden (" + str(m.moe->ffn_hidden) + ")");
  require(p.ep == 1 || p.tp == 1 || sequence_parallel, where, "parallel.ep", p.ep,
          "expert parallelism with tp > 1 needs sequence_parallel (as Megatron requires)");
  if (p.ep_group_style == EpGroupStyle::kDeepSpeed) {
    require(p.etp == 1 || p.etp == p.tp, where, "parallel.etp", p.etp,
            "with ep_group_style \"deepspeed\" expert tensor parallelism is off (1) or tp");
    require((num_gpus / p.pp / p.etp) % p.ep == 0, where, "parallel.ep", p.ep,
            "with ep_group_style \"deepspeed\" must divide the ranks of a data-parallel group");
  }
  e.edp = num_gpus / expert_parallel;
  if (p.ep_group_style == EpGroupStyle::kMegatron && p.pp > 1)
    check_expert_pipeline(p, e, num_gpus, where);
  return e;
}

// The schedule training.schedule names, or Megatron's choice (vpp > 1 interleaves).
const PipelineSchedule& choose_schedule(const ParallelSpec& p, const TrainingSpec& t,
                                        const std::string& where) {
  require(p.vpp == 1 || p.pp > 1, where, "parallel.vpp", p.vpp,
          "virtual pipeline chunks need pp > 1");
  const PipelineSchedule* schedule =
      t.schedule ? t.schedule : find_pipeline_schedule(p.vpp > 1 ? "interleaved" : "1f1b");
  if (schedule->splits_weight_gradients) {
    // The step builder defers the weight-gradient GEMMs of the layers' linears (MLA's
    // projections among them), the routed experts' grouped GEMMs, the router, the MTP
    // projection and the output layer; full recompute's per-layer transients would stay alive
    // until W.
    const auto refuse = [&](const std::string& what) {
      throw InputError(where, "training.schedule", schedule->name,
                       "separate weight-gradient (W) passes are not built " + what);
    };
    if (t.recompute == Recompute::full) refuse("with training.recompute \"full\"");
  }
  return *schedule;
}

// The effective sharding; a stated one must agree with training.distributed_optimizer (the run
// config makes them agree), and sharded gradients are modelled where their reduction is.
DataSharding choose_data_sharding(const ModelSpec& model, const ParallelSpec& p,
                                  const TrainingSpec& t, const std::string& where) {
  const DataSharding fallback =
      t.distributed_optimizer ? DataSharding::kOptimizer : DataSharding::kNone;
  const DataSharding sharding = p.data_sharding.value_or(fallback);
  const std::string name = to_string(sharding);
  if ((sharding != DataSharding::kNone) != t.distributed_optimizer) {
    throw InputError(where, "parallel.data_sharding", name,
                     std::string("contradicts training.distributed_optimizer = ") +
                         (t.distributed_optimizer ? "true" : "false"));
  }
  if (sharding >= DataSharding::kGrads && model.tied_embeddings && p.pp > 1) {
    throw InputError(where, "parallel.data_sharding", name,
                     "sharded gradients with tied embeddings on pp > 1 are not modelled (the "
                     "first and last stage's embedding gradients would be reduced per "
                     "micro-batch and then summed between them)");
  }
  if (sharding >= DataSharding::kGrads && t.schedule && t.schedule->splits_weight_gradients) {
    throw InputError(where, "parallel.data_sharding", name,
                     "sharded gradients with a schedule that defers weight gradients (" +
                         t.schedule->name +
                         ") are not modelled: the units' gradients would be written in W passes");
  }
  return sharding;
}

// Schedules that keep two copies of the parameters (DualPipe) sum their gradients over both
// copies' data-parallel ranks; what that leaves unmodelled is refused.
void check_parameter_copies(const ModelSpec& model, const ParallelSpec& p, const Layout& layout,
                            const PipelineSchedule& schedule, const std::string& where) {
  if (schedule.chains == 1) return;
  const auto refuse = [&](const std::string& what) {
    throw InputError(where, "training.schedule", schedule.name, what + " are not modelled");
  };
  if (model.tied_embeddings) {
    refuse(
        "tied embeddings with two pipeline directions (each end stage would hold the table for "
        "one direction's embedding and the other's output layer)");
  }
  if (p.pipeline_layout) refuse("parallel.pipeline_layout placements for two directions");
  if (layout.shard_group > 0) {
    refuse("hybrid sharding (parallel.fsdp_shard_group) over two parameter copies");
  }
}

// Hybrid sharding: a shard group divides DP×CP, shards something, and leaves routed experts
// (sharded over expert DP) alone.
std::int64_t check_shard_group(const ModelSpec& model, const ParallelSpec& p, const Layout& layout,
                               const std::string& where) {
  if (!p.fsdp_shard_group) return 0;
  const std::int64_t group = *p.fsdp_shard_group;
  const std::string key = "parallel.fsdp_shard_group";
  if (layout.data_sharding == DataSharding::kNone) {
    throw InputError(where, key, str(group),
                     "shards nothing: it needs the distributed optimizer or a "
                     "parallel.data_sharding that shards (optimizer, grads, params)");
  }
  if (layout.dp_cp() % group != 0) {
    throw InputError(where, key, str(group),
                     "must divide dp·cp = " + str(layout.dp_cp()) +
                         ": the data-parallel ranks split into equal shard groups");
  }
  if (model.moe) {
    throw InputError(where, key, str(group),
                     "hybrid sharding is not modelled for MoE models (routed experts shard over "
                     "expert data parallelism)");
  }
  return group == layout.dp_cp() ? 0 : group;
}

// Offloaded activations are copied around a layer's forward and backward; the paths that
// interleave or split those are not built with the copies.
void check_offload(const ModelSpec& model, const TrainingSpec& t, const PipelineSchedule& schedule,
                   const std::string& where) {
  if (!t.offload_activations) return;
  const auto refuse = [&](const std::string& why) {
    throw InputError(where, "training.offload.activations", "true",
                     "activation offloading is not modelled " + why);
  };
  if (schedule.splits_weight_gradients) {
    refuse("with schedules that defer weight gradients (" + schedule.name + ")");
  }
  if (model.moe && t.overlap.ep_comm) refuse("with training.overlap.ep_comm (paired layers)");
  for (const std::string& module : t.offload_modules) {
    if ((module == "expert_fc1" || module == "moe_act") && !model.moe) {
      throw InputError(where, "training.offload.activations", module,
                       "offloads routed experts' tensors: the model has no MoE layers");
    }
  }
}

}  // namespace

Layout make_layout(const ModelSpec& model, const ParallelSpec& parallel,
                   const TrainingSpec& training, std::int64_t num_gpus, const std::string& where) {
  Layout layout;
  layout.sizes = derive_sizes(parallel, num_gpus, where);
  layout.order = parallel.order;
  layout.vpp = parallel.vpp;
  check_model_split(model, parallel, where);
  layout.sequence_parallel = parallel.sequence_parallel && parallel.tp > 1;
  if (parallel.sequence_parallel && parallel.tp == 1) {
    layout.notes.push_back("sequence_parallel switched off: it needs tp > 1 (as Megatron does)");
  }
  check_batch(training, layout.sizes, where);
  check_sequence(training, layout.sizes, layout.sequence_parallel, parallel.cp_load_balance, where);
  layout.cp = check_context(model, parallel, training, where);
  layout.expert = check_experts(model, parallel, num_gpus, layout.sequence_parallel, where);
  // Combined forward/backward pairs need the extra warm-up micro-batch interleaving gives: with
  // plain 1F1B each pair would wait for the neighbouring stage's pair.
  const PipelineSchedule& schedule = choose_schedule(parallel, training, where);
  layout.schedule = &schedule;
  if (model.moe && training.overlap.ep_comm && parallel.pp > 1 &&
      !schedule.pairs_backward_with_forward) {
    throw InputError(where, "training.overlap.ep_comm", "true",
                     "the EP all-to-all overlap needs pp = 1 or a schedule with a spare warm-up "
                     "forward, such as \"interleaved\" (vpp > 1); training.schedule is \"" +
                         schedule.name + "\"");
  }
  if (training.overlap.shared_expert) {
    if (!model.moe || model.moe->shared_ffn_hidden == 0) {
      throw InputError(where, "training.overlap.shared_expert", "true",
                       "the model has no shared experts (model.moe.shared_ffn_hidden)");
    }
    if (!overlaps_shared_experts(layout.expert.dispatcher)) {
      throw InputError(where, "training.overlap.shared_expert", "true",
                       "Megatron-Core overlaps the shared experts only with the alltoall or "
                       "flex dispatcher; parallel.moe_dispatcher is \"allgather\"");
    }
  }
  if (model.moe && !model.moe->capacity_factor &&
      training.cuda_graphs == CudaGraphs::kFullIteration) {
    throw InputError(where, "training.cuda_graphs", "full_iteration",
                     "dropless MoE routing (no moe.capacity_factor) makes the host read each "
                     "MoE layer's token counts, which a captured step cannot do: set "
                     "moe.capacity_factor (buffers padded to capacity, no host sync) or use "
                     "\"per_layer\"");
  }
  layout.num_microbatches = training.global_batch / (training.micro_batch * layout.sizes.dp);
  layout.data_sharding = choose_data_sharding(model, parallel, training, where);
  layout.shard_group = check_shard_group(model, parallel, layout, where);
  check_parameter_copies(model, parallel, layout, schedule, where);
  check_offload(model, training, schedule, where);
  if (training.offload_optimizer_states > 0 && layout.data_sharding > DataSharding::kOptimizer) {
    throw InputError(where, "training.offload.optimizer_states",
                     nlohmann::json(training.offload_optimizer_states).dump(),
                     "the chunked optimizer-state offload is modelled with the distributed "
                     "optimizer (parallel.data_sharding \"optimizer\"), not with sharded "
                     "gradients or parameters");
  }
  if (training.offload_optimizer_fraction > 0 && layout.data_sharding > DataSharding::kOptimizer) {
    throw InputError(where, "training.offload.optimizer_fraction",
                     nlohmann::json(training.offload_optimizer_fraction).dump(),
                     "the hybrid CPU optimizer is modelled with the distributed optimizer "
                     "(parallel.data_sharding \"optimizer\") or none, not with sharded "
                     "gradients or parameters");
  }
  if (const std::string why = schedule.rejects(layout.pipeline_shape()); !why.empty()) {
    throw InputError(where, "training.schedule", schedule.name, why);
  }
  layout.virtual_stages = VirtualStages(schedule, layout.pipeline_shape());
  std::vector<std::int64_t> layout_sizes;
  if (parallel.pipeline_layout) {
    const auto& stages = parallel.layout_stages;
    const std::string problem = pipeline_layout_problem(stages, model.layers, model.mtp_layers);
    if (!problem.empty()) {
      throw InputError(where, "parallel.pipeline_layout", *parallel.pipeline_layout, problem);
    }
    for (const LayoutStage& stage : stages) layout_sizes.push_back(stage.decoders);
  }
  layout.placement =
      place_layers({model.layers, parallel.pp, parallel.vpp, parallel.first_stage_layers,
                    parallel.last_stage_layers, layout.virtual_stages, layout_sizes},
                   where);
  if (!layout.placement.note.empty()) layout.notes.push_back(layout.placement.note);
  return layout;
}

}  // namespace wallsim::models
