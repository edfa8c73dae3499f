#include "models/launch_args/torchtitan_parallel.hpp"

#include "models/launch_args/megatron_args.hpp"
#include "models/launch_args/torchtitan_layout.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

using nlohmann::json;

const std::string kSection = "parallelism";

std::string str(std::int64_t value) {
  return std::to_string(value);
}

std::int64_t degree(TorchTitanToml& toml, const std::string& key, std::int64_t fallback) {
  const std::int64_t value = toml.integer(kSection, key).value_or(fallback);
  if (value < 1 || value > MegatronArgs::kMaxParallel) {
    toml.fail(kSection, key, str(value),
              "must be an integer from 1 to " + str(MegatronArgs::kMaxParallel));
  }
  return value;
}

// data_parallel_shard_degree -1: the ranks left after replicate, CP, TP and PP
// (torchtitan/distributed/parallel_dims.py).
std::int64_t leftover_shard(TorchTitanToml& toml, std::int64_t others,
                            std::optional<std::int64_t> num_gpus) {
  const std::string key = "data_parallel_shard_degree";
  if (!num_gpus) {
    toml.fail(kSection, key, "-1",
              "takes the GPUs left over, and the file does not hold the GPU count: give wallsim "
              "import --num-gpus N");
  }
  if (*num_gpus % others != 0) {
    toml.fail(kSection, key, "-1",
              "the GPUs left over, " + str(*num_gpus) + " / (replicate·cp·tp·pp = " + str(others) +
                  "), is not an integer; --num-gpus must be a multiple of " + str(others));
  }
  return *num_gpus / others;
}

void check_gpu_count(TorchTitanToml& toml, const TorchTitanDegrees& d,
                     std::optional<std::int64_t> num_gpus) {
  if (d.num_gpus > MegatronArgs::kMaxParallel) {
    toml.fail(kSection, "", str(d.num_gpus),
              "the degrees multiply to more than " + str(MegatronArgs::kMaxParallel) + " GPUs");
  }
  if (num_gpus && *num_gpus != d.num_gpus) {
    toml.fail(kSection, "data_parallel_shard_degree", str(d.shard),
              "replicate·shard·cp·tp·pp = " + str(d.replicate) + "·" + str(d.shard) + "·" +
                  str(d.cp) + "·" + str(d.tp) + "·" + str(d.pp) + " = " + str(d.num_gpus) +
                  " must equal the GPU count " + str(*num_gpus) + " (--num-gpus)");
  }
}

// FSDP2 shards over dp_shard (and CP) ranks; DDP replicates; HSDP does both
// (parallel.fsdp_shard_group).
void read_sharding(TorchTitanToml& toml, const TorchTitanDegrees& d, bool moe, json& parallel,
                   json& overlap, std::vector<std::string>& warnings) {
  const std::string key = "fsdp_reshard_after_forward";
  const std::string policy = toml.string(kSection, key).value_or("default");
  if (policy != "default" && policy != "always" && policy != "never") {
    toml.fail(kSection, key, policy, "must be one of default, always, never");
  }
  const bool fsdp = d.shard > 1 || d.cp > 1;
  // "default" reshards unless PP runs several micro-batches per step
  // (torchtitan/models/llama3/infra/parallelize.py, apply_fsdp).
  const bool reshard = policy == "always" || (policy == "default" && d.pp == 1);
  parallel["data_sharding"] = !fsdp ? "none" : reshard ? "params" : "grads";
  overlap["dp_grad_reduce"] = d.dp() > 1;
  overlap["dp_param_gather"] = fsdp && d.dp() > 1;
  if (fsdp && !reshard) {
    warnings.push_back(
        "parallelism.fsdp_reshard_after_forward " + policy +
        (policy == "default" ? " (with pipeline parallelism)" : "") +
        ": FSDP keeps the parameters gathered from forward to backward; simulated as "
        "parallel.data_sharding grads (ZeRO-2: whole bf16 parameters on every rank, gradients "
        "and optimizer state sharded, one parameter all-gather and one gradient reduce-scatter "
        "per step)");
  }
  if (fsdp && d.replicate > 1 && !moe) {
    // HSDP: sharded over dp_shard × cp, replicated over dp_replicate (the outer mesh dimension,
    // so each shard group is consecutive DP×CP ranks).
    parallel["fsdp_shard_group"] = d.shard * d.cp;
  } else if (fsdp && d.replicate > 1) {
    warnings.push_back(
        "HSDP (data_parallel_replicate_degree " + str(d.replicate) +
        " × data_parallel_shard_degree " + str(d.shard) +
        ") of an MoE model is not modelled: simulated as FSDP over all " + str(d.dp()) +
        " data-parallel ranks, so parameters, gradients and optimizer state are sharded 1/" +
        str(d.dp()) + " instead of 1/" + str(d.shard) +
        " (memory underestimated) and the all-gathers and reduce-scatters span " + str(d.dp()) +
        " ranks instead of " + str(d.shard) + ", without the all-reduce across the " +
        str(d.replicate) + " replicas");
  }
}

void read_tensor_parallel(TorchTitanToml& toml, const TorchTitanDegrees& d, bool compile,
                          json& parallel, json& overlap, std::vector<std::string>& warnings) {
  parallel["tp"] = d.tp;
  // TorchTitan's TP plans shard the norms' sequence (SequenceParallel) whenever TP is on.
  parallel["sequence_parallel"] = d.tp > 1;
  const bool async = toml.boolean(kSection, "enable_async_tensor_parallel").value_or(false);
  overlap["tp_comm"] = async && compile && d.tp > 1;
  if (async && !compile) {
    warnings.push_back(
        "parallelism.enable_async_tensor_parallel needs [compile] enable in TorchTitan: "
        "simulated without TP communication overlap");
  }
}

void read_context_parallel(TorchTitanToml& toml, const TorchTitanDegrees& d, json& parallel) {
  const auto rotate = toml.string(kSection, "context_parallel_rotate_method");
  const auto balancer = toml.string(kSection, "context_parallel_load_balancer");
  if (rotate && *rotate != "allgather" && *rotate != "alltoall") {
    toml.fail(kSection, "context_parallel_rotate_method", *rotate, "must be allgather or alltoall");
  }
  if (balancer && *balancer != "headtail" && *balancer != "ptrr") {
    toml.fail(kSection, "context_parallel_load_balancer", *balancer, "must be headtail or ptrr");
  }
  parallel["cp"] = d.cp;
  if (d.cp == 1) return;
  // allgather gathers all KV shards once; alltoall passes KV shards around the ring, one
  // neighbour exchange per step, which is the p2p ring.
  parallel["cp_comm_type"] = rotate.value_or("allgather") == "allgather" ? "all_gather" : "p2p";
  parallel["cp_load_balance"] = true;  // both balancers give each rank head and tail chunks
}

void read_experts(TorchTitanToml& toml, const TorchTitanDegrees& d, bool moe, json& parallel,
                  std::vector<std::string>& warnings) {
  const auto backend = toml.string(kSection, "expert_parallel_comm_backend");
  if (backend && *backend != "standard" && *backend != "deepep") {
    toml.fail(kSection, "expert_parallel_comm_backend", *backend, "must be standard or deepep");
  }
  if (!moe) {
    if (d.ep > 1 || d.etp > 1) {
      warnings.push_back(
          "parallelism.expert_parallel_degree / expert_tensor_parallel_degree: no effect on a "
          "model without experts");
    }
    return;
  }
  if (d.ep > 1 && d.etp != 1 && d.etp != d.tp) {
    toml.fail(kSection, "expert_tensor_parallel_degree", str(d.etp),
              "must be 1 or tensor_parallel_degree (" + str(d.tp) + ")");
  }
  parallel["ep"] = d.ep;
  // Without EP the experts are sharded by TP like the other weights.
  parallel["etp"] = d.ep > 1 ? d.etp : d.tp;
  parallel["moe_dispatcher"] = backend.value_or("standard") == "deepep" ? "flex" : "alltoall";
}

// The decoder layers of each stage named in module_fqns_per_model_part: tok_embeddings first,
// norm and output last, "layers.i" in between.
std::vector<std::int64_t> layers_of_parts(TorchTitanToml& toml,
                                          const std::vector<std::vector<std::string>>& parts) {
  const std::string key = "module_fqns_per_model_part";
  std::vector<std::int64_t> layers;
  for (std::size_t stage = 0; stage < parts.size(); ++stage) {
    std::int64_t count = 0;
    for (const std::string& name : parts[stage]) {
      const bool edge = name == "tok_embeddings" || name == "norm" || name == "output";
      if (name.starts_with("layers.")) {
        ++count;
      } else if (!edge) {
        toml.fail(kSection, key, name,
                  "wallsim places tok_embeddings, layers.i, norm and output only");
      }
      const bool first_only = name == "tok_embeddings";
      if (edge && (first_only ? stage != 0 : stage + 1 != parts.size())) {
        toml.fail(kSection, key, name,
                  "wallsim runs tok_embeddings on the first model part and norm, output on the "
                  "last");
      }
    }
    layers.push_back(count);
  }
  return layers;
}

struct StagePlan {
  std::int64_t stages = 1;
  std::optional<std::vector<std::int64_t>> layers;
};

// The virtual stages and their layers: listed model parts, else layers per stage, else
// TorchTitan's default of one stage per rank (two for multi-stage schedules).
StagePlan plan_stages(TorchTitanToml& toml, const TorchTitanDegrees& d, std::int64_t layers,
                      const TorchTitanSchedule& schedule) {
  const std::int64_t first_less =
      toml.integer(kSection, "pipeline_parallel_first_stage_less_layers").value_or(1);
  const std::int64_t last_less =
      toml.integer(kSection, "pipeline_parallel_last_stage_less_layers").value_or(1);
  for (const auto& [key, weight] :
       {std::pair{"pipeline_parallel_first_stage_less_layers", first_less},
        std::pair{"pipeline_parallel_last_stage_less_layers", last_less}}) {
    if (weight < 0 || weight > layers) {
      toml.fail(kSection, key, str(weight),
                "must be from 0 to the model's " + str(layers) + " layers");
    }
  }
  const auto parts = toml.string_lists(kSection, "module_fqns_per_model_part");
  const auto per_stage = toml.integer(kSection, "pipeline_parallel_layers_per_stage");
  StagePlan plan;
  if (parts) {
    plan.layers = layers_of_parts(toml, *parts);
    plan.stages = static_cast<std::int64_t>(parts->size());
    return plan;
  }
  if (per_stage) {
    if (*per_stage < 1 || *per_stage > layers) {
      toml.fail(kSection, "pipeline_parallel_layers_per_stage", str(*per_stage),
                "must be from 1 to the model's " + str(layers) + " layers");
    }
    plan.stages = (layers + first_less + last_less + *per_stage - 1) / *per_stage;
  } else {
    plan.stages = d.pp * (schedule.multi_stage ? 2 : 1);
  }
  plan.layers = torchtitan_stage_layers(plan.stages, layers, first_less, last_less);
  if (!plan.layers) {
    toml.fail(kSection, "pipeline_parallel_first_stage_less_layers", str(first_less),
              "TorchTitan cannot split " + str(layers) + " layers over " + str(plan.stages) +
                  " stages with first/last stage weights " + str(first_less) + "/" +
                  str(last_less));
  }
  return plan;
}

std::string schedule_names() {
  std::string names;
  for (const auto& entry : torchtitan_schedules()) {
    if (entry.wallsim != nullptr) names += (names.empty() ? "" : ", ") + std::string(entry.name);
  }
  return names;
}

void read_pipeline(TorchTitanToml& toml, const TorchTitanDegrees& d, std::int64_t layers,
                   json& parallel, json& training, std::vector<std::string>& warnings) {
  const std::string key = "pipeline_parallel_schedule";
  const std::string name = toml.string(kSection, key).value_or("1F1B");
  parallel["pp"] = d.pp;
  const TorchTitanSchedule* schedule = find_torchtitan_schedule(name);
  if (d.pp == 1) return;  // no pipeline: TorchTitan builds no schedule
  if (schedule == nullptr || schedule->wallsim == nullptr) {
    toml.fail(kSection, key, name,
              std::string(schedule == nullptr ? "not a torch.distributed.pipelining schedule"
                                              : "not modelled by wallsim") +
                  "; must be one of " + schedule_names());
  }
  const StagePlan plan = plan_stages(toml, d, layers, *schedule);
  const std::int64_t per_rank = plan.stages / d.pp;
  if (plan.stages % d.pp != 0 || per_rank < 1 ||
      (schedule->multi_stage ? per_rank < 2 : per_rank != 1)) {
    toml.fail(kSection, key, name,
              str(plan.stages) + " stages over " + str(d.pp) + " ranks: " + name + " needs " +
                  (schedule->multi_stage ? "2 or more stages per rank" : "one stage per rank"));
  }
  parallel["pipeline_layout"] = layout_of_stages(*plan.layers);
  training["schedule"] = schedule->wallsim;
  if (schedule->approximation != nullptr) {
    warnings.push_back("parallelism.pipeline_parallel_schedule " + name + ": " +
                       schedule->approximation);
  }
}

}  // namespace

TorchTitanDegrees read_torchtitan_degrees(TorchTitanToml& toml,
                                          std::optional<std::int64_t> num_gpus) {
  if (num_gpus && (*num_gpus < 1 || *num_gpus > MegatronArgs::kMaxParallel)) {
    throw InputError("command line", "--num-gpus", str(*num_gpus),
                     "must be from 1 to " + str(MegatronArgs::kMaxParallel));
  }
  TorchTitanDegrees d;
  d.replicate = degree(toml, "data_parallel_replicate_degree", 1);
  d.tp = degree(toml, "tensor_parallel_degree", 1);
  d.cp = degree(toml, "context_parallel_degree", 1);
  d.pp = degree(toml, "pipeline_parallel_degree", 1);
  d.ep = degree(toml, "expert_parallel_degree", 1);
  d.etp = degree(toml, "expert_tensor_parallel_degree", 1);
  // Each degree ≤ 2^20, so each pair's product fits, and so does theirs once each is ≤ 2^20.
  const std::int64_t outer = d.replicate * d.cp;
  const std::int64_t inner = d.tp * d.pp;
  if (outer > MegatronArgs::kMaxParallel || inner > MegatronArgs::kMaxParallel ||
      outer * inner > MegatronArgs::kMaxParallel) {
    toml.fail(kSection, "", "",
              "replicate·cp·tp·pp exceeds " + str(MegatronArgs::kMaxParallel) + " GPUs");
  }
  const std::int64_t others = outer * inner;
  const auto shard = toml.integer(kSection, "data_parallel_shard_degree").value_or(-1);
  d.shard = shard == -1 ? leftover_shard(toml, others, num_gpus)
                        : degree(toml, "data_parallel_shard_degree", -1);
  d.num_gpus = d.shard * others;  // both ≤ 2^20
  check_gpu_count(toml, d, num_gpus);
  return d;
}

}  // namespace wallsim::models

namespace wallsim::models {

void read_torchtitan_parallel(TorchTitanToml& toml, const TorchTitanDegrees& degrees,
                              const TorchTitanModelShape& model, bool compile, json& config,
                              std::vector<std::string>& warnings) {
  json& parallel = config["parallel"];
  json& training = config["training"];
  json& overlap = training["overlap"];
  read_tensor_parallel(toml, degrees, compile, parallel, overlap, warnings);
  read_context_parallel(toml, degrees, parallel);
  read_pipeline(toml, degrees, model.layers, parallel, training, warnings);
  read_experts(toml, degrees, model.moe, parallel, warnings);
  read_sharding(toml, degrees, model.moe, parallel, overlap, warnings);
  parallel["dp"] = degrees.dp();
}

}  // namespace wallsim::models
