#include "models/launch_args/torchtitan_export.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "models/launch_args/torchtitan_layout.hpp"
#include "models/run_config.hpp"

namespace wallsim::models {
namespace {

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned char>(c));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string list(const std::vector<std::string>& items) {
  std::string text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) text += (i > 0 ? ", " : "") + quoted(items[i]);
  return text + "]";
}

class Toml {
 public:
  void section(const std::string& name) { text_ += (text_.empty() ? "[" : "\n[") + name + "]\n"; }
  void add(const std::string& key, const std::string& value) { line(key, quoted(value)); }
  void add(const std::string& key, const char* value) { line(key, quoted(value)); }
  void add(const std::string& key, std::int64_t value) { line(key, std::to_string(value)); }
  void add(const std::string& key, bool value) { line(key, value ? "true" : "false"); }
  void add(const std::string& key, const std::vector<std::string>& items) {
    line(key, list(items));
  }
  void add(const std::string& key, const std::vector<std::vector<std::string>>& parts) {
    std::string text = "[\n";
    for (const auto& part : parts) text += "  " + list(part) + ",\n";
    line(key, text + "]");
  }
  void comment(const std::string& text) { text_ += "# " + text + "\n"; }
  std::string take() { return std::move(text_); }

 private:
  void line(const std::string& key, const std::string& value) {
    text_ += key + " = " + value + "\n";
  }
  std::string text_;
};

void add_model(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  out.section("model");
  const TorchTitanFlavor* flavor = find_torchtitan_flavor_of_model(c.model.name);
  if (flavor == nullptr) {
    out.comment("no TorchTitan flavour has the shape of " + c.model.name);
    notes.push_back("model " + c.model.name + " has no TorchTitan flavour wallsim knows (" +
                    torchtitan_flavor_names() + "): [model] name and flavor are left out");
  } else {
    out.add("name", flavor->name);
    out.add("flavor", flavor->flavor);
  }
  if (c.model.mtp_layers > 0) {
    notes.push_back("model.mtp_layers " + std::to_string(c.model.mtp_layers) +
                    ": TorchTitan trains no multi-token-prediction layer");
  }
  std::vector<std::string> converters;
  const Quantization quantization = c.training.quantization;
  if (quantization == Quantization::kFp8PerTensor) converters = {"quantize.linear.float8"};
  if (quantization == Quantization::kMxfp8) converters = {"quantize.linear.mx"};
  if (quantization == Quantization::kNvfp4) {
    notes.push_back("training.precision nvfp4 has no TorchTitan converter: written as bf16");
  }
  // wallsim quantizes the expert GEMMs with the linears.
  if (!converters.empty() && c.model.moe) {
    converters.push_back(converters.front() == "quantize.linear.mx" ? "quantize.grouped_mm.mx"
                                                                    : "quantize.grouped_mm.float8");
  }
  if (!converters.empty()) out.add("converters", converters);
}

void add_training(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  const TrainingSpec& t = c.training;
  const std::int64_t dp = c.layout.sizes.dp;
  out.section("training");
  // With PP one schedule runs every micro-batch of the step; without it local_batch_size is the
  // micro-batch and gradient accumulation makes up the global batch.
  out.add("local_batch_size", c.layout.sizes.pp > 1 ? t.global_batch / dp : t.micro_batch);
  out.add("global_batch_size", t.global_batch);
  out.add("seq_len", t.seq_len);
  out.add("mixed_precision_param", "bfloat16");
  const bool bf16_reduce = t.grad_reduce_dtype == Dtype::kBf16;
  out.add("mixed_precision_reduce", bf16_reduce ? "bfloat16" : "float32");
  if (bf16_reduce) {
    notes.push_back(
        "training.grad_reduce_dtype bf16: TorchTitan's job config documents float32 "
        "only for mixed_precision_reduce");
  }
  if (t.offload_activations) {
    notes.push_back("training.offload.activations has no TorchTitan job config field");
  }
}

// Megatron-LM and Transformer Engine choices a run config can hold that TorchTitan has no field
// for.
void note_megatron_only(const RunConfig& c, std::vector<std::string>& notes) {
  const TrainingSpec& t = c.training;
  if (t.cuda_graphs != CudaGraphs::kNone) {
    notes.push_back(std::string("training.cuda_graphs ") + to_string(t.cuda_graphs) +
                    " has no TorchTitan job config field");
  }
  if (t.attention_backend) {
    notes.push_back("training.attention_backend: TorchTitan picks the attention kernel itself");
  }
  if (t.cross_entropy_fusion != CrossEntropyFusion::kNone) {
    notes.push_back("training.cross_entropy_fusion has no TorchTitan job config field");
  }
  if (t.optimizer.precision_aware) {
    notes.push_back(
        "training.optimizer.precision_aware (Megatron's precision-aware optimizer) "
        "has no TorchTitan job config field");
  }
  if (c.model.moe && !c.layout.expert.grouped_gemm) {
    notes.push_back("parallel.moe_grouped_gemm false: TorchTitan's MoE runs grouped GEMMs");
  }
}

// The TorchTitan schedule that runs wallsim's `schedule` as wallsim does, or nullptr.
const TorchTitanSchedule* torchtitan_schedule_running(const std::string& schedule) {
  for (const char* name : {"1F1B", "Interleaved1F1B", "ZBVZeroBubble", "DualPipeV"}) {
    const TorchTitanSchedule* titan = find_torchtitan_schedule(name);
    if (titan->wallsim == schedule) return titan;
  }
  return nullptr;
}

void add_pipeline(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  const Layout& layout = c.layout;
  out.add("pipeline_parallel_degree", layout.sizes.pp);
  if (layout.sizes.pp == 1) return;
  const std::string schedule = layout.schedule ? layout.schedule->name : "1f1b";
  const TorchTitanSchedule* titan = torchtitan_schedule_running(schedule);
  out.add("pipeline_parallel_schedule", titan ? titan->name : "1F1B");
  if (titan == nullptr) {
    notes.push_back("training.schedule " + schedule +
                    ": TorchTitan's zero-bubble schedules hold two or more stages per rank; "
                    "written as 1F1B");
  }
  out.add("pipeline_parallel_microbatch_size", c.training.micro_batch);
  const std::vector<std::int64_t> layers = layers_per_virtual_stage(layout);
  const std::int64_t stages = static_cast<std::int64_t>(layers.size());
  const bool default_count = layout.vpp == (titan && titan->multi_stage ? 2 : 1);
  if (!default_count || torchtitan_stage_layers(stages, c.model.layers, 1, 1) != layers) {
    out.add("module_fqns_per_model_part", fqns_of_stages(layers));
  }
}

void add_context_parallel(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  out.add("context_parallel_degree", c.layout.sizes.cp);
  if (c.layout.sizes.cp == 1) return;
  const CpCommType type = c.layout.cp.type;
  out.add("context_parallel_rotate_method", type == CpCommType::kP2p ? "alltoall" : "allgather");
  if (type != CpCommType::kP2p && type != CpCommType::kAllGather) {
    notes.push_back(std::string("parallel.cp_comm_type ") + to_string(type) +
                    ": TorchTitan rotates KV by all-gather or ring only; written as allgather");
  }
  if (!c.layout.cp.load_balance) {
    notes.push_back(
        "parallel.cp_load_balance false: TorchTitan balances the causal load; "
        "context_parallel_load_balancer left at its default");
  }
}

void add_experts(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  if (!c.model.moe) return;
  const ExpertLayout& expert = c.layout.expert;
  out.add("expert_parallel_degree", expert.ep);
  out.add("expert_tensor_parallel_degree", expert.ep > 1 ? expert.etp : std::int64_t{1});
  out.add("expert_parallel_comm_backend",
          expert.dispatcher == MoeDispatcher::kFlex ? "deepep" : "standard");
  if (expert.dispatcher == MoeDispatcher::kAllGather) {
    notes.push_back("parallel.moe_dispatcher allgather: TorchTitan dispatches by all-to-all");
  }
  if (expert.ep == 1 && expert.etp != c.layout.sizes.tp) {
    notes.push_back("parallel.etp without EP: TorchTitan shards the experts by TP");
  }
  if (expert.group_style == EpGroupStyle::kDeepSpeed) {
    notes.push_back("parallel.ep_group_style deepspeed is not TorchTitan's expert mesh");
  }
}

// FSDP2 shards parameters, gradients and optimizer state; resharding after forward or not is
// ZeRO-3 or ZeRO-2; DDP (replicate) shards nothing.
void add_data_parallel(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  const Layout& layout = c.layout;
  const std::int64_t dp = layout.sizes.dp;
  const DataSharding sharding = layout.data_sharding;
  const bool fsdp = sharding != DataSharding::kNone;
  // Hybrid sharding: the shard group spans dp_shard × cp ranks, replicated over dp_replicate.
  std::int64_t replicas = fsdp ? layout.dp_replicas() : dp;
  if (dp % replicas != 0) {
    notes.push_back("parallel.fsdp_shard_group " + std::to_string(layout.dp_shards()) +
                    " does not span whole CP groups (context_parallel_degree " +
                    std::to_string(layout.sizes.cp) +
                    "), as TorchTitan's dp_shard × cp mesh does: written as FSDP over every rank");
    replicas = 1;
  }
  out.add("data_parallel_replicate_degree", replicas);
  out.add("data_parallel_shard_degree", dp / replicas);
  if (fsdp) {
    const bool pp = layout.sizes.pp > 1;
    const bool reshard = sharding == DataSharding::kParams;
    out.add("fsdp_reshard_after_forward", reshard == !pp ? "default"
                                          : reshard      ? "always"
                                                         : "never");
  }
  if (sharding == DataSharding::kOptimizer) {
    notes.push_back(
        "parallel.data_sharding optimizer (ZeRO-1) has no FSDP2 equivalent: written "
        "as FSDP without resharding after forward (ZeRO-2)");
  }
  if (!fsdp && layout.sizes.cp > 1) {
    notes.push_back(
        "parallel.data_sharding none: TorchTitan shards parameters over the CP ranks "
        "whenever context_parallel_degree > 1");
  }
  const OverlapSpec& overlap = c.training.overlap;
  if (dp > 1 && (!overlap.dp_grad_reduce || (fsdp && !overlap.dp_param_gather))) {
    notes.push_back(
        "training.overlap.dp_*: TorchTitan always overlaps the data-parallel "
        "collectives with compute");
  }
}

void add_parallelism(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  const Layout& layout = c.layout;
  out.section("parallelism");
  add_data_parallel(c, out, notes);
  out.add("tensor_parallel_degree", layout.sizes.tp);
  const bool async = c.training.overlap.tp_comm && layout.sizes.tp > 1;
  out.add("enable_async_tensor_parallel", async);
  if (layout.sizes.tp > 1 && !layout.sequence_parallel) {
    notes.push_back(
        "parallel.sequence_parallel false: TorchTitan's TP always shards the norms' "
        "sequence");
  }
  add_pipeline(c, out, notes);
  add_context_parallel(c, out, notes);
  add_experts(c, out, notes);
  const AxisOrder titan{Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};
  if (layout.order != titan) {
    notes.push_back(
        "parallel.order: TorchTitan's device mesh is pp, dp, cp, tp from outer to "
        "inner (tp-cp-ep-dp-pp)");
  }
  if (!c.training.overlap.cp_comm && layout.sizes.cp > 1) {
    notes.push_back("training.overlap.cp_comm false has no TorchTitan field");
  }
  if (c.training.overlap.ep_comm) {
    notes.push_back("training.overlap.ep_comm has no TorchTitan field");
  }
  if (c.training.overlap.shared_expert) {
    notes.push_back("training.overlap.shared_expert has no TorchTitan field");
  }
}

void add_recompute(const RunConfig& c, Toml& out, std::vector<std::string>& notes) {
  const TrainingSpec& t = c.training;
  out.section("activation_checkpoint");
  out.add("mode", to_string(t.recompute));
  if (t.recompute == Recompute::selective) {
    out.add("selective_ac_option", "op");
    notes.push_back(
        "training.recompute selective: Megatron-style recompute of the listed "
        "modules has no TorchTitan option; written as per-op selective "
        "checkpointing (selective_ac_option op)");
  }
}

}  // namespace

TorchTitanExport export_torchtitan_toml(const RunConfig& config) {
  TorchTitanExport result;
  Toml out;
  out.comment("TorchTitan job config for the layout wallsim simulates on " +
              std::to_string(config.num_gpus) + " GPUs (wallsim export torchtitan); launch with " +
              std::to_string(config.num_gpus) + " ranks");
  out.section("job");
  out.add("description", config.source && config.source->contains("description") &&
                                 config.source->at("description").is_string()
                             ? config.source->at("description").get<std::string>()
                             : config.model.name);
  add_model(config, out, result.notes);
  add_training(config, out, result.notes);
  add_parallelism(config, out, result.notes);
  add_recompute(config, out, result.notes);
  note_megatron_only(config, result.notes);
  out.section("compile");
  // Async TP takes effect only under torch.compile.
  out.add("enable", config.training.overlap.tp_comm && config.layout.sizes.tp > 1);
  if (config.training.quantization == Quantization::kFp8PerTensor) {
    out.section("quantize.linear.float8");
    out.add("recipe_name", "tensorwise");
  }
  result.toml = out.take();
  return result;
}

}  // namespace wallsim::models
