#include "models/training_spec.hpp"

#include <algorithm>

#include "sim/core/byte_size.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/network/model/network_model.hpp"

namespace wallsim::models {
namespace {

// A byte count: a number, or a string such as "512MiB" (sim/core/byte_size.hpp).
double read_bytes(JsonObject& object, const char* key, double fallback) {
  auto node = object.find(key);
  if (!node) return fallback;
  if (node->is_number()) return node->as_number(0);
  if (!node->is_string()) node->fail("must be a byte count: a number or a string like \"512MiB\"");
  try {
    return static_cast<double>(parse_byte_size(node->as_string(), node->path()));
  } catch (const InputError&) {
    node->fail("must be a byte count: a number or a string like \"512MiB\"");
  }
}

MemoryAllowances parse_allowances(const JsonNode& node) {
  JsonObject object(node);
  MemoryAllowances a;
  a.cuda_context_bytes = read_bytes(object, "cuda_context", a.cuda_context_bytes);
  if (object.find("workspaces")) a.workspace_bytes = read_bytes(object, "workspaces", 0.0);
  if (object.find("comm_buffers")) a.comm_buffer_bytes = read_bytes(object, "comm_buffers", 0.0);
  a.nccl_channels = static_cast<int>(object.integer_or("nccl_channels", a.nccl_channels, 1, 64));
  a.allocator_slack = object.number_or("allocator_slack", a.allocator_slack, 0.0, 0.99);
  a.fit_margin = object.number_or("fit_margin", a.fit_margin, 0.0, 0.5);
  object.finish();
  return a;
}

OverlapSpec parse_overlap(const JsonNode& node) {
  JsonObject object(node);
  OverlapSpec o;
  o.tp_comm = object.boolean_or("tp_comm", o.tp_comm);
  o.dp_grad_reduce = object.boolean_or("dp_grad_reduce", o.dp_grad_reduce);
  o.dp_param_gather = object.boolean_or("dp_param_gather", o.dp_param_gather);
  o.cp_comm = object.boolean_or("cp_comm", o.cp_comm);
  o.ep_comm = object.boolean_or("ep_comm", o.ep_comm);
  o.shared_expert = object.boolean_or("shared_expert", o.shared_expert);
  object.finish();
  return o;
}

std::vector<std::string> parse_recompute_modules(const JsonNode& node) {
  std::vector<std::string> modules;
  for (const JsonNode& item : node.as_array()) {
    modules.push_back(
        item.as_choice({"core_attn", "mlp", "layernorm", "moe", "moe_act", "mla_up_proj"}));
  }
  return modules;
}

Recompute parse_recompute(const std::string& name) {
  if (name == "selective") return Recompute::selective;
  if (name == "full") return Recompute::full;
  return Recompute::none;
}

// training.attention_backend, and training.flash_attention, which names the same choice in
// two values: false is the unfused backend, true any fused one. A pair that disagrees is refused.
void parse_attention_backend(JsonObject& object, TrainingSpec& t) {
  const auto backend = object.find("attention_backend");
  const auto flash = object.find("flash_attention");
  if (backend) {
    t.attention_backend =
        attention_backend_from_name(backend->as_choice(attention_backend_names()));
  }
  if (flash) {
    const bool fused = flash->as_bool();
    if (!backend && !fused) t.attention_backend = AttentionBackend::kUnfused;
    if (backend && fused == (t.attention_backend == AttentionBackend::kUnfused)) {
      backend->fail(std::string("contradicts training.flash_attention = ") +
                    (fused ? "true" : "false") + ": " +
                    (fused
                         ? "a fused backend (cudnn, flash2, flash3) goes with flash_attention true"
                         : "flash_attention false is the unfused backend") +
                    "; give one of the two keys");
    }
  }
  t.flash_attention = t.attention_backend != AttentionBackend::kUnfused;
}

}  // namespace

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
    case Recompute::none:
      break;
  }
  return "none";
}

namespace {

// `training.offload`: {"activations": bool | [module names], "layers": N,
// "optimizer_fraction": 0..1, "optimizer_overlap": bool, "optimizer_states": 0..1,
// "optimizer_state_chunk_mb": MiB}.
void parse_offload(const JsonNode& node, TrainingSpec& t) {
  JsonObject object(node);
  if (auto value = object.find("activations")) {
    if (value->is_array()) {
      for (const JsonNode& item : value->as_array()) {
        const std::string name = item.as_choice(offload_module_names());
        if (std::find(t.offload_modules.begin(), t.offload_modules.end(), name) !=
            t.offload_modules.end()) {
          item.fail("is listed twice");
        }
        t.offload_modules.push_back(name);
      }
      if (t.offload_modules.empty()) {
        value->fail("must name at least one module (or be true for whole layers)");
      }
      const auto has = [&](const char* name) {
        return std::find(t.offload_modules.begin(), t.offload_modules.end(), name) !=
               t.offload_modules.end();
      };
      if (has("attn_proj") && !has("core_attn")) {
        value->fail(
            "attn_proj needs core_attn: the projection's input is the core attention's output, "
            "which both keep (Megatron-Core requires them together)");
      }
      t.offload_activations = true;
    } else {
      t.offload_activations = value->as_bool();
    }
  }
  if (auto layers = object.find("layers")) {
    if (!t.offload_activations || !t.offload_modules.empty()) {
      layers->fail(
          "counts whole layers: it needs training.offload.activations true (as Megatron's "
          "--cpu-offloading-num-layers needs --cpu-offloading)");
    }
    t.offload_layers = layers->as_integer(1);
  }
  t.offload_optimizer_fraction = object.number_or("optimizer_fraction", 0.0, 0.0, 1.0);
  if (auto overlap = object.find("optimizer_overlap")) {
    t.offload_optimizer_overlap = overlap->as_bool();
    if (t.offload_optimizer_fraction == 0 && t.offload_optimizer_overlap) {
      overlap->fail(
          "overlaps the copies of an offloaded optimizer: it needs "
          "training.offload.optimizer_fraction > 0");
    }
  }
  t.offload_optimizer_states = object.number_or("optimizer_states", 0.0, 0.0, 1.0);
  if (auto chunk = object.find("optimizer_state_chunk_mb")) {
    if (t.offload_optimizer_states == 0) {
      chunk->fail(
          "sizes the staging of offloaded optimizer state: it needs "
          "training.offload.optimizer_states > 0");
    }
    t.offload_optimizer_state_chunk_mb = chunk->as_number(0);
  }
  if (t.offload_optimizer_states > 0 && t.offload_optimizer_fraction > 0) {
    object.at("optimizer_states")
        .fail(
            "and optimizer_fraction exclude each other (Megatron asserts "
            "--chunked-optimizer-state-offload and --optimizer-cpu-offload are mutually "
            "exclusive: one steps on the GPU, the other on the CPU)");
  }
  object.finish();
}

}  // namespace

bool offloaded_in_chunk(std::int64_t index, std::int64_t count,
                        std::optional<std::int64_t> layers) {
  return index < count - 1 && (!layers || index < *layers);
}

bool TrainingSpec::offloads_layer(std::int64_t index, std::int64_t count) const {
  return offload_activations && offloaded_in_chunk(index, count, offload_layers);
}

bool TrainingSpec::recomputes(const std::string& module) const {
  return recompute == Recompute::selective &&
         std::find(recompute_modules.begin(), recompute_modules.end(), module) !=
             recompute_modules.end();
}

TrainingSpec parse_training_spec(const JsonNode& node) {
  JsonObject object(node);
  TrainingSpec t;
  t.seq_len = object.integer("seq_len", 1);
  t.micro_batch = object.integer_or("micro_batch", 1, 1);
  t.global_batch = object.integer("global_batch", 1);
  const Precision precision = *precision_from_name(
      object.choice_or("precision", "bf16", {"bf16", "fp8", "mxfp8", "nvfp4"}));
  t.precision = precision.gemm_dtype;
  t.quantization = precision.quantization;
  t.recompute =
      parse_recompute(object.choice_or("recompute", "none", {"none", "selective", "full"}));
  if (auto modules = object.find("recompute_modules")) {
    t.recompute_modules = parse_recompute_modules(*modules);
  }
  t.distributed_optimizer = object.boolean_or("distributed_optimizer", false);
  if (auto schedule = object.find("schedule")) {
    t.schedule = find_pipeline_schedule(schedule->as_choice(pipeline_schedule_names()));
  }
  t.grad_reduce_dtype =
      *dtype_from_name(object.choice_or("grad_reduce_dtype", "fp32", {"fp32", "bf16"}));
  if (auto optimizer = object.find("optimizer")) {
    t.optimizer = parse_optimizer_precision(*optimizer);
  }
  parse_attention_backend(object, t);
  const std::string graphs =
      object.choice_or("cuda_graphs", "none", {"none", "per_layer", "full_iteration"});
  t.cuda_graphs = graphs == "per_layer"        ? CudaGraphs::kPerLayer
                  : graphs == "full_iteration" ? CudaGraphs::kFullIteration
                                               : CudaGraphs::kNone;
  t.cross_entropy_fusion = *cross_entropy_fusion_from_name(
      object.choice_or("cross_entropy_fusion", "none", cross_entropy_fusion_names()));
  if (auto overlap = object.find("overlap")) t.overlap = parse_overlap(*overlap);
  if (auto offload = object.find("offload")) parse_offload(*offload, t);
  if (auto allowances = object.find("memory_allowances")) {
    t.memory_allowances = parse_allowances(*allowances);
  }
  t.expandable_segments = object.boolean_or("expandable_segments", t.expandable_segments);
  t.moe_memory_efficient_permutation =
      object.boolean_or("moe_memory_efficient_permutation", t.moe_memory_efficient_permutation);
  object.finish();
  return t;
}

const std::vector<std::string>& offload_module_names() {
  static const std::vector<std::string> names = {
      "attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act"};
  return names;
}

const char* to_string(CudaGraphs graphs) {
  switch (graphs) {
    case CudaGraphs::kNone:
      return "none";
    case CudaGraphs::kPerLayer:
      return "per_layer";
    case CudaGraphs::kFullIteration:
      return "full_iteration";
  }
  return "none";
}

const char* to_string(Fidelity fidelity) {
  return fidelity == Fidelity::kFull ? "full" : "symmetric";
}

SimulationSpec parse_simulation_spec(const JsonNode& node) {
  JsonObject object(node);
  SimulationSpec s;
  s.fidelity = object.choice_or("fidelity", "symmetric", {"full", "symmetric"}) == "full"
                   ? Fidelity::kFull
                   : Fidelity::kSymmetric;
  s.network = object.choice_or("network", s.network, network_model_names());
  s.max_events = object.integer_or("max_events", s.max_events, 0);
  object.finish();
  return s;
}

}  // namespace wallsim::models
