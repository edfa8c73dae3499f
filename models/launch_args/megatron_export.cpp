#include "models/launch_args/megatron_export.hpp"

#include <cstdio>

#include "models/run_config.hpp"

namespace wallsim::models {
namespace {

std::string str(std::int64_t value) {
  return std::to_string(value);
}

// Shortest text that reads back as the same double.
std::string number(double value) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::stod(text) == value) break;
  }
  return text;
}

class Options {
 public:
  void add(std::string flag, std::vector<std::string> values = {}) {
    options_.push_back({std::move(flag), std::move(values)});
  }
  void add(std::string flag, std::int64_t value) { add(std::move(flag), {str(value)}); }
  std::vector<MegatronOption> take() { return std::move(options_); }

 private:
  std::vector<MegatronOption> options_;
};

void add_heads(const ModelSpec& m, Options& out) {
  out.add("--num-attention-heads", m.heads);
  if (m.mla) return;
  if (m.kv_heads != m.heads) {
    out.add("--group-query-attention");
    out.add("--num-query-groups", m.kv_heads);
  }
  if (m.hidden % m.heads != 0 || m.head_dim != m.hidden / m.heads) {
    out.add("--kv-channels", m.head_dim);
  }
}

void add_shape(const ModelSpec& m, Options& out) {
  out.add("--num-layers", m.layers);
  out.add("--hidden-size", m.hidden);
  out.add("--ffn-hidden-size", m.ffn_hidden);
  add_heads(m, out);
  out.add("--vocab-size", m.vocab);
  if (m.activation == Activation::swiglu) out.add("--swiglu");
  if (m.activation == Activation::squared_relu) out.add("--squared-relu");
  out.add("--normalization", {m.norm == Norm::rmsnorm ? "RMSNorm" : "LayerNorm"});
  if (!m.tied_embeddings) out.add("--untie-embeddings-and-output-weights");
  out.add("--disable-bias-linear");  // wallsim counts no linear biases
  out.add("--hidden-dropout", {number(m.hidden_dropout)});
  out.add("--attention-dropout", {number(m.attention_dropout)});
}

std::string layer_freq(const MoeSpec& moe, std::int64_t layers) {
  if (moe.first_dense_layers > 0) {
    return "([0]*" + str(moe.first_dense_layers) + "+[1]*" + str(layers - moe.first_dense_layers) +
           ")";
  }
  return str(moe.layer_freq);
}

void add_moe(const ModelSpec& m, const Layout& layout, Options& out,
             std::vector<std::string>& notes) {
  if (!m.moe) return;
  const MoeSpec& moe = *m.moe;
  out.add("--num-experts", moe.experts);
  out.add("--moe-router-topk", moe.topk);
  out.add("--moe-ffn-hidden-size", moe.ffn_hidden);
  if (moe.shared_ffn_hidden > 0) {
    out.add("--moe-shared-expert-intermediate-size", moe.shared_ffn_hidden);
  }
  if (moe.first_dense_layers > 0 || moe.layer_freq > 1) {
    out.add("--moe-layer-freq", {layer_freq(moe, m.layers)});
  }
  out.add("--moe-router-score-function", {moe.score_function});
  if (moe.capacity_factor) {
    out.add("--moe-expert-capacity-factor", {number(*moe.capacity_factor)});
    out.add("--moe-pad-expert-input-to-capacity");
  }
  if (moe.router_fusion) out.add("--moe-router-fusion");
  if (moe.router_groups > 0) {
    out.add("--moe-router-num-groups", moe.router_groups);
    out.add("--moe-router-group-topk", moe.router_group_topk);
  }
  out.add("--moe-token-dispatcher-type", {to_string(layout.expert.dispatcher)});
  if (layout.expert.grouped_gemm) out.add("--moe-grouped-gemm");
  if (moe.imbalance.kind != RouterImbalance::Kind::uniform) {
    notes.push_back("moe.router_imbalance is a property of the data, not a Megatron option");
  }
}

void add_latent(const ModelSpec& m, Options& out) {
  if (m.mla) {
    out.add("--multi-latent-attention");
    if (m.mla->q_lora_rank) out.add("--q-lora-rank", *m.mla->q_lora_rank);
    out.add("--kv-lora-rank", m.mla->kv_lora_rank);
    out.add("--qk-head-dim", m.mla->qk_head_dim);
    out.add("--qk-pos-emb-head-dim", m.mla->qk_rope_head_dim);
    out.add("--v-head-dim", m.mla->v_head_dim);
  }
  if (m.mtp_layers > 0) out.add("--mtp-num-layers", m.mtp_layers);
}

// The placement as Megatron's --pipeline-model-parallel-layout: per virtual stage, E (the
// embedding) on the first, its decoder layers, then MTP layers and L (the loss) on the last.
std::string placement_layout(const RunConfig& c) {
  const Layout& layout = c.layout;
  const std::int64_t count = layout.virtual_stages.count();
  std::string text;
  for (std::int64_t v = 0; v < count; ++v) {
    const StageChunk at = layout.virtual_stages.place(v);
    const ChunkLayers& chunk = layout.placement.stages[static_cast<std::size_t>(at.stage)]
                                   .chunks[static_cast<std::size_t>(at.chunk)];
    if (v > 0) text += "|";
    if (v == 0) text += "E";
    if (chunk.count == 1) text += "t";
    if (chunk.count > 1) text += "t*" + std::to_string(chunk.count);
    if (v + 1 == count) {
      for (std::int64_t m = 0; m < c.model.mtp_layers; ++m) text += "m";
      text += "L";
    }
  }
  return text;
}

void add_pipeline(const RunConfig& c, Options& out) {
  const ParallelSpec& p = c.parallel;
  out.add("--pipeline-model-parallel-size", p.pp);
  if (p.pipeline_layout) {
    out.add("--pipeline-model-parallel-layout", {*p.pipeline_layout});
    return;
  }
  // Layers that do not divide evenly, without first/last stage sizes: wallsim spreads them,
  // which Megatron accepts only as an explicit layout.
  const bool sized = p.first_stage_layers || p.last_stage_layers;
  if (p.pp > 1 && !sized && c.model.layers % (p.pp * p.vpp) != 0) {
    out.add("--pipeline-model-parallel-layout", {placement_layout(c)});
    return;
  }
  if (p.first_stage_layers) out.add("--decoder-first-pipeline-num-layers", *p.first_stage_layers);
  if (p.last_stage_layers) out.add("--decoder-last-pipeline-num-layers", *p.last_stage_layers);
  if (p.vpp == 1) return;
  const bool even =
      !p.first_stage_layers && !p.last_stage_layers && c.model.layers % (p.pp * p.vpp) == 0;
  if (even) {
    out.add("--num-layers-per-virtual-pipeline-stage", c.model.layers / (p.pp * p.vpp));
  } else {
    out.add("--num-virtual-stages-per-pipeline-rank", p.vpp);
  }
}

void add_parallel(const RunConfig& c, Options& out, std::vector<std::string>& notes) {
  const ParallelSpec& p = c.parallel;
  out.add("--tensor-model-parallel-size", p.tp);
  if (c.layout.sequence_parallel) out.add("--sequence-parallel");
  add_pipeline(c, out);
  out.add("--context-parallel-size", p.cp);
  if (p.cp > 1 || p.cp_comm_type != CpCommType::kP2p) {
    out.add("--cp-comm-type",
            {p.cp_comm_type == CpCommType::kAllGather ? std::string("allgather")
                                                      : to_string(p.cp_comm_type)});
  }
  if (p.hierarchical_cp) {
    out.add("--hierarchical-context-parallel-sizes",
            {str((*p.hierarchical_cp)[0]), str((*p.hierarchical_cp)[1])});
  }
  if (c.model.moe) {
    out.add("--expert-model-parallel-size", p.ep);
    out.add("--expert-tensor-parallel-size", p.etp);
  }
  const AxisOrder megatron{Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};
  const AxisOrder tp_pp_dp{Axis::tp, Axis::cp, Axis::ep, Axis::pp, Axis::dp};
  if (p.order == tp_pp_dp) out.add("--use-tp-pp-dp-mapping");
  if (p.order != megatron && p.order != tp_pp_dp) {
    notes.push_back(
        "parallel.order: Megatron-LM builds tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with "
        "--use-tp-pp-dp-mapping, only");
  }
  if (!p.cp_load_balance) notes.push_back("parallel.cp_load_balance false has no Megatron option");
  if (p.ep_group_style == EpGroupStyle::kDeepSpeed) {
    notes.push_back(
        "parallel.ep_group_style \"deepspeed\" is DeepSpeed's grouping, not Megatron's");
  }
}

// --use-precision-aware-optimizer and the dtypes that differ from Megatron's fp32 defaults.
void add_optimizer_precision(const OptimizerPrecision& p, Options& out) {
  if (!p.precision_aware) return;
  out.add("--use-precision-aware-optimizer");
  const auto add = [&](const char* flag, StateDtype dtype) {
    if (dtype != StateDtype::kFp32) out.add(flag, {std::string(state_dtype_name(dtype))});
  };
  add("--main-params-dtype", p.main_params);
  add("--exp-avg-dtype", p.exp_avg);
  add("--exp-avg-sq-dtype", p.exp_avg_sq);
}

void add_recompute(const TrainingSpec& t, Options& out) {
  if (t.recompute == Recompute::full) {
    out.add("--recompute-granularity", {"full"});
    out.add("--recompute-method", {"uniform"});
    out.add("--recompute-num-layers", 1);
  } else if (t.recompute == Recompute::selective) {
    out.add("--recompute-granularity", {"selective"});
    if (t.recompute_modules != std::vector<std::string>{"core_attn"}) {
      out.add("--recompute-modules", t.recompute_modules);
    }
  }
}

void add_kernels(const TrainingSpec& t, Options& out, std::vector<std::string>& notes) {
  if (t.attention_backend) {
    switch (*t.attention_backend) {
      case AttentionBackend::kCudnn:
        out.add("--attention-backend", {"fused"});
        break;
      case AttentionBackend::kFlash3:
        notes.push_back(
            "training.attention_backend flash3: --attention-backend flash runs "
            "flash-attn 3 only where it is installed");
        [[fallthrough]];
      case AttentionBackend::kFlash2:
        out.add("--attention-backend", {"flash"});
        break;
      case AttentionBackend::kUnfused:
        out.add("--attention-backend", {"unfused"});
        break;
    }
  }
  if (t.cuda_graphs != CudaGraphs::kNone) out.add("--cuda-graph-impl", {"local"});
  if (t.cuda_graphs == CudaGraphs::kFullIteration) {
    out.add("--cuda-graph-scope", {"full_iteration"});
  }
  if (t.cross_entropy_fusion != CrossEntropyFusion::kNone) {
    out.add("--cross-entropy-loss-fusion");
    out.add("--cross-entropy-fusion-impl",
            {t.cross_entropy_fusion == CrossEntropyFusion::kTe ? "te" : "native"});
  }
}

void add_training(const RunConfig& c, Options& out, std::vector<std::string>& notes) {
  const TrainingSpec& t = c.training;
  out.add("--seq-length", t.seq_len);
  out.add("--micro-batch-size", t.micro_batch);
  out.add("--global-batch-size", t.global_batch);
  out.add("--bf16");
  if (t.precision == Dtype::kFp8) out.add("--fp8-format", {"hybrid"});
  add_recompute(t, out);
  if (t.distributed_optimizer) out.add("--use-distributed-optimizer");
  if (c.layout.data_sharding >= DataSharding::kGrads) {
    out.add("--use-megatron-fsdp");
    out.add(
        "--data-parallel-sharding-strategy",
        {c.layout.data_sharding == DataSharding::kParams ? "optim_grads_params" : "optim_grads"});
  }
  if (c.layout.shard_group > 0) {
    out.add("--num-distributed-optimizer-instances", c.layout.dp_replicas());
  }
  if (t.offload_activations && !t.offload_modules.empty()) {
    out.add("--fine-grained-activation-offloading");
    out.add("--offload-modules", t.offload_modules);
  } else if (t.offload_activations) {
    // Megatron offloads a number of layers; wallsim all but the last of each chunk.
    out.add("--cpu-offloading");
    const std::int64_t chunks = c.parallel.pp * c.parallel.vpp;
    out.add("--cpu-offloading-num-layers",
            t.offload_layers.value_or((c.model.layers + chunks - 1) / chunks - 1));
    if (chunks > 1) {
      notes.push_back(
          "training.offload.activations: Megatron's --cpu-offloading-num-layers counts "
          "layers of the whole model; wallsim offloads all but the last of each chunk");
    }
  }
  if (t.grad_reduce_dtype == Dtype::kBf16) out.add("--grad-reduce-in-bf16");
  add_optimizer_precision(t.optimizer, out);
  if (t.offload_optimizer_fraction > 0) {
    out.add("--optimizer-cpu-offload");
    out.add("--optimizer-offload-fraction", {number(t.offload_optimizer_fraction)});
    if (t.offload_optimizer_overlap) out.add("--overlap-cpu-optimizer-d2h-h2d");
  }
  if (t.offload_optimizer_states > 0) {
    out.add("--chunked-optimizer-state-offload");
    out.add("--optimizer-state-offload-fraction", {number(t.offload_optimizer_states)});
    if (t.offload_optimizer_state_chunk_mb > 0) {
      out.add("--optimizer-state-offload-chunk-size-mb",
              {number(t.offload_optimizer_state_chunk_mb)});
    }
  }
  if (t.overlap.dp_grad_reduce) out.add("--overlap-grad-reduce");
  // The overlapped gather is the distributed optimizer's (Megatron refuses the flag without it);
  // without one there is no parameter gather to overlap.
  if (t.overlap.dp_param_gather && t.distributed_optimizer) out.add("--overlap-param-gather");
  // TP overlap needs sequence parallelism in Megatron; at tp 1 there is no TP traffic to hide.
  if (t.overlap.tp_comm && c.layout.sequence_parallel) out.add("--tp-comm-overlap");
  if (t.overlap.ep_comm) out.add("--overlap-moe-expert-parallel-comm");
  if (t.overlap.shared_expert) out.add("--moe-shared-expert-overlap");
  if (!t.overlap.cp_comm) notes.push_back("training.overlap.cp_comm false has no Megatron option");
  add_kernels(t, out, notes);
  if (const std::string why = megatron_unsupported(c); !why.empty()) notes.push_back(why);
}

// A word the shell passes through unchanged, else single-quoted.
std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of(
                                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789-_.,/:=+@%") == std::string::npos;
  if (plain) return word;
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string megatron_unsupported(const RunConfig& config) {
  const std::string schedule = config.layout.schedule ? config.layout.schedule->name : "";
  if (schedule == "1f1b" || schedule == "interleaved") return "";
  return "training.schedule " + schedule + " is not a Megatron-LM schedule";
}

MegatronExport export_megatron_args(const RunConfig& config) {
  MegatronExport result;
  Options out;
  add_shape(config.model, out);
  add_moe(config.model, config.layout, out, result.notes);
  add_latent(config.model, out);
  add_parallel(config, out, result.notes);
  add_training(config, out, result.notes);
  result.options = out.take();
  return result;
}

std::vector<std::string> torchrun_words(const RunConfig& config) {
  const std::int64_t per_node = config.cluster.gpus_per_node;
  const bool whole_nodes = config.num_gpus % per_node == 0;
  return {"torchrun",
          "--nproc_per_node",
          str(whole_nodes ? per_node : config.num_gpus),
          "--nnodes",
          str(whole_nodes ? config.num_gpus / per_node : 1),
          "pretrain_gpt.py"};
}

std::string format_megatron_args(const std::vector<MegatronOption>& options, bool one_per_line,
                                 const std::vector<std::string>& prefix) {
  std::string text;
  for (const auto& word : prefix) text += (text.empty() ? "" : " ") + shell_quote(word);
  for (std::size_t i = 0; i < options.size(); ++i) {
    if (i > 0 || !text.empty()) text += one_per_line ? " \\\n" : " ";
    text += options[i].flag;
    for (const auto& value : options[i].values) text += " " + shell_quote(value);
  }
  return one_per_line ? text + "\n" : text;
}

}  // namespace wallsim::models
