#include "models/launch_args/megatron_training_import.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "models/parallel_spec.hpp"
#include "models/training_spec.hpp"

namespace wallsim::models {
namespace {

using nlohmann::json;

std::string str(std::int64_t value) {
  return std::to_string(value);
}

// Virtual pipeline stages from --num-layers-per-virtual-pipeline-stage N (layers / (pp·N)) or
// --num-virtual-stages-per-pipeline-rank; Megatron refuses both together.
std::int64_t read_vpp(MegatronArgs& args, std::int64_t layers, std::int64_t pp) {
  const char* kPerStage = "--num-layers-per-virtual-pipeline-stage";
  const char* kStages = "--num-virtual-stages-per-pipeline-rank";
  const auto per_stage = args.integer(kPerStage, 1, MegatronArgs::kMaxParallel);
  const auto stages = args.integer(kStages, 1, MegatronArgs::kMaxParallel);
  if (per_stage && stages)
    args.fail(kStages, "give it or " + std::string(kPerStage) + ", not both");
  if (stages) return *stages;
  if (!per_stage) return 1;
  if (layers % (pp * *per_stage) != 0) {
    args.fail(kPerStage, str(*per_stage),
              "--num-layers (" + str(layers) + ") must be a multiple of pp·N = " + str(pp) + "·" +
                  str(*per_stage));
  }
  return layers / (pp * *per_stage);
}

void read_pipeline(MegatronArgs& args, std::int64_t layers, json& parallel) {
  const std::int64_t pp =
      args.integer("--pipeline-model-parallel-size", 1, MegatronArgs::kMaxParallel).value_or(1);
  const std::int64_t vpp = read_vpp(args, layers, pp);
  const auto layout = args.text("--pipeline-model-parallel-layout");
  const auto first = args.integer("--decoder-first-pipeline-num-layers", 0);
  const auto last = args.integer("--decoder-last-pipeline-num-layers", 0);
  parallel["pp"] = pp;
  if (vpp > 1) parallel["vpp"] = vpp;
  if (first) parallel["first_stage_layers"] = *first;
  if (last) parallel["last_stage_layers"] = *last;
  if (layout) {
    parallel["pipeline_layout"] = *layout;
    return;
  }
  if (!first && !last && layers % (pp * vpp) != 0) {
    args.fail("--num-layers", str(layers),
              "must be a multiple of pp·vpp = " + str(pp) + "·" + str(vpp) +
                  " (Megatron refuses an uneven split; --decoder-first/last-pipeline-num-layers "
                  "or --pipeline-model-parallel-layout place layers unevenly)");
  }
}

// Megatron spells the all-gather exchange "allgather"; one type for every layer.
void read_context(MegatronArgs& args, json& parallel, std::vector<std::string>& notes) {
  parallel["cp"] =
      args.integer("--context-parallel-size", 1, MegatronArgs::kMaxParallel).value_or(1);
  const std::vector<std::string> types = args.list("--cp-comm-type");
  const std::vector<std::string> sizes = args.list("--hierarchical-context-parallel-sizes");
  const bool hierarchical = !types.empty() && types[0] == "a2a+p2p";
  if (!sizes.empty() && !hierarchical) {
    notes.push_back(
        "--hierarchical-context-parallel-sizes is ignored without --cp-comm-type "
        "a2a+p2p");
  }
  if (types.empty()) return;
  for (const auto& type : types) {
    if (type != types[0]) {
      args.fail("--cp-comm-type", type,
                "per-layer exchange types are not modelled: give one type for every layer");
    }
  }
  static const std::pair<const char*, const char*> kTypes[] = {
      {"p2p", "p2p"}, {"allgather", "all_gather"}, {"a2a", "a2a"}, {"a2a+p2p", "a2a+p2p"}};
  const auto it = std::find_if(std::begin(kTypes), std::end(kTypes),
                               [&](const auto& entry) { return types[0] == entry.first; });
  if (it == std::end(kTypes)) {
    args.fail("--cp-comm-type", types[0], "must be one of p2p, allgather, a2a, a2a+p2p");
  }
  parallel["cp_comm_type"] = it->second;
  if (sizes.empty() || !hierarchical) return;
  if (sizes.size() != 2) {
    args.fail("--hierarchical-context-parallel-sizes", "must give two sizes: a2a and p2p");
  }
  json pair = json::array();
  for (const auto& text : sizes) {
    std::size_t used = 0;
    std::int64_t value = 0;
    try {
      value = std::stoll(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != text.size() || value < 1 || value > MegatronArgs::kMaxParallel) {
      args.fail("--hierarchical-context-parallel-sizes", text,
                "must be integers from 1 to " + std::to_string(MegatronArgs::kMaxParallel));
    }
    pair.push_back(value);
  }
  parallel["hierarchical_cp"] = pair;
}

void read_experts(MegatronArgs& args, const json& model, json& parallel) {
  if (!model.contains("moe")) return;
  const std::int64_t tp = parallel["tp"].get<std::int64_t>();
  parallel["ep"] =
      args.integer("--expert-model-parallel-size", 1, MegatronArgs::kMaxParallel).value_or(1);
  parallel["etp"] = args.integer("--expert-tensor-parallel-size", 1, MegatronArgs::kMaxParallel)
                        .value_or(tp);  // Megatron: = tp
  parallel["moe_dispatcher"] =
      args.choice("--moe-token-dispatcher-type", {"allgather", "alltoall", "flex"})
          .value_or("allgather");
  parallel["moe_grouped_gemm"] = args.enabled("--moe-grouped-gemm");
}

json read_parallel(MegatronArgs& args, const json& model, std::vector<std::string>& notes) {
  json parallel;
  parallel["tp"] =
      args.integer("--tensor-model-parallel-size", 1, MegatronArgs::kMaxParallel).value_or(1);
  parallel["sequence_parallel"] = args.enabled("--sequence-parallel");
  read_context(args, parallel, notes);
  read_pipeline(args, model["layers"].get<std::int64_t>(), parallel);
  read_experts(args, model, parallel);
  if (args.enabled("--use-tp-pp-dp-mapping")) parallel["order"] = "tp-cp-ep-pp-dp";
  return parallel;
}

std::string read_precision(MegatronArgs& args, std::vector<std::string>& notes) {
  const bool bf16 = args.enabled("--bf16");
  const bool fp16 = args.enabled("--fp16");
  if (bf16 && fp16) args.fail("--fp16", "contradicts --bf16: give one");
  if (args.choice("--fp8-format", {"e4m3", "hybrid"})) return "fp8";
  if (fp16) notes.push_back("--fp16 is simulated as bf16 (same bytes; loss scaling not modelled)");
  if (!bf16 && !fp16) {
    args.fail("--bf16",
              "missing: without --bf16, --fp16 or --fp8-format Megatron trains in fp32, "
              "which wallsim does not model (bf16 and fp8 only)");
  }
  return "bf16";
}

void read_full_recompute(MegatronArgs& args, std::int64_t layers_per_chunk,
                         std::vector<std::string>& notes) {
  const auto method = args.choice("--recompute-method", {"uniform", "block"});
  const auto count = args.integer("--recompute-num-layers");
  if (!method || !count) {
    args.fail("--recompute-granularity", "full",
              "needs --recompute-method and --recompute-num-layers (Megatron refuses it without)");
  }
  const bool every_layer =
      (*method == "uniform" && *count == 1) || (*method == "block" && *count >= layers_per_chunk);
  if (!every_layer) {
    notes.push_back("--recompute-method " + *method + " --recompute-num-layers " + str(*count) +
                    ": wallsim's full recompute checkpoints every layer on its own (uniform, 1)");
  }
}

void read_recompute_modules(MegatronArgs& args, json& training, std::vector<std::string>& notes) {
  json modules = json::array();
  for (const auto& name : args.list("--recompute-modules")) {
    static const std::vector<std::string> kModelled = {"core_attn", "mlp",     "layernorm",
                                                       "moe",       "moe_act", "mla_up_proj"};
    if (std::find(kModelled.begin(), kModelled.end(), name) != kModelled.end()) {
      modules.push_back(name);
    } else if (name == "shared_experts") {
      notes.push_back("--recompute-modules shared_experts is not modelled (not recomputed)");
    } else {
      args.fail("--recompute-modules", name,
                "must be among core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                "shared_experts");
    }
  }
  if (args.has("--recompute-modules")) training["recompute_modules"] = modules;
}

void read_recompute(MegatronArgs& args, std::int64_t layers_per_chunk, json& training,
                    std::vector<std::string>& notes) {
  std::string granularity =
      args.choice("--recompute-granularity", {"full", "selective"}).value_or("none");
  if (args.enabled("--recompute-activations")) granularity = "selective";  // as Megatron sets it
  training["recompute"] = granularity;
  if (granularity == "full") read_full_recompute(args, layers_per_chunk, notes);
  if (granularity != "full") {
    for (const char* flag : {"--recompute-method", "--recompute-num-layers"}) {
      if (args.has(flag)) {
        args.ignore(flag);
        notes.push_back(std::string(flag) + " is ignored without --recompute-granularity full");
      }
    }
  }
  if (granularity == "selective") read_recompute_modules(args, training, notes);
  if (granularity != "selective" && args.has("--recompute-modules")) {
    args.ignore("--recompute-modules");
    notes.push_back("--recompute-modules is ignored without selective recompute");
  }
}

// Megatron refuses --overlap-param-gather without the distributed optimizer and without
// --overlap-grad-reduce, and --tp-comm-overlap without sequence parallelism (arguments.py).
void read_overlap(MegatronArgs& args, const json& parallel, json& training) {
  json overlap;
  overlap["tp_comm"] = args.enabled("--tp-comm-overlap");
  overlap["dp_grad_reduce"] = args.enabled("--overlap-grad-reduce");
  overlap["dp_param_gather"] = args.enabled("--overlap-param-gather");
  overlap["ep_comm"] = args.enabled("--overlap-moe-expert-parallel-comm");
  // Megatron reads the switch only for a model with shared experts, and refuses it with the
  // all-gather dispatcher (transformer_config.py).
  if (args.enabled("--moe-shared-expert-overlap") &&
      args.has("--moe-shared-expert-intermediate-size")) {
    const auto dispatcher = parse_moe_dispatcher(parallel.value("moe_dispatcher", ""));
    if (dispatcher && !overlaps_shared_experts(*dispatcher)) {
      args.fail("--moe-shared-expert-overlap",
                "needs --moe-token-dispatcher-type alltoall or flex (Megatron refuses it)");
    }
    overlap["shared_expert"] = true;
  }
  if (overlap["dp_param_gather"] && !training["distributed_optimizer"].get<bool>()) {
    args.fail("--overlap-param-gather", "needs --use-distributed-optimizer (Megatron refuses it)");
  }
  if (overlap["dp_param_gather"] && !overlap["dp_grad_reduce"].get<bool>()) {
    args.fail("--overlap-param-gather", "needs --overlap-grad-reduce (Megatron refuses it)");
  }
  if (overlap["tp_comm"] && !parallel["sequence_parallel"].get<bool>()) {
    args.fail("--tp-comm-overlap", "needs --sequence-parallel (Megatron refuses it)");
  }
  training["overlap"] = overlap;
}

// --attention-backend (AttnBackend): flash is Transformer Engine's flash-attn backend (version
// 2 unless flash-attn 3 is installed), fused is cuDNN, unfused and local are Megatron's own
// unfused attention; auto (the default) leaves the choice to wallsim's model of TE.
void read_kernels(MegatronArgs& args, json& training, std::vector<std::string>& notes) {
  const auto backend =
      args.choice("--attention-backend", {"flash", "fused", "unfused", "local", "auto"});
  if (backend == "flash" || (!backend && args.enabled("--use-flash-attn"))) {
    training["attention_backend"] = "flash2";
  } else if (backend == "fused") {
    training["attention_backend"] = "cudnn";
  } else if (backend == "unfused" || backend == "local") {
    training["attention_backend"] = "unfused";
  }
  args.enabled("--use-flash-attn");
  const auto impl = args.choice("--cuda-graph-impl", {"none", "local", "transformer_engine"});
  const std::vector<std::string> scope = args.list("--cuda-graph-scope");
  const bool enable = args.enabled("--enable-cuda-graph");
  const bool external = args.enabled("--external-cuda-graph");
  const bool graphs = enable || external || (impl && *impl != "none");
  const bool full = std::find(scope.begin(), scope.end(), "full_iteration") != scope.end();
  if (graphs) training["cuda_graphs"] = full ? "full_iteration" : "per_layer";
  if (graphs && !full && !scope.empty() && scope != std::vector<std::string>{"full"}) {
    notes.push_back("--cuda-graph-scope: wallsim captures whole layers (per_layer)");
  }
  const auto impl_ce = args.choice("--cross-entropy-fusion-impl", {"native", "te"});
  if (args.enabled("--cross-entropy-loss-fusion")) {
    training["cross_entropy_fusion"] = impl_ce.value_or("native");
  } else if (impl_ce) {
    notes.push_back("--cross-entropy-fusion-impl is ignored without --cross-entropy-loss-fusion");
  }
}

// Megatron-FSDP (--use-megatron-fsdp) shards by --data-parallel-sharding-strategy, whose
// argparse default is optim_grads_params; without FSDP the strategy is not read.
void read_data_sharding(MegatronArgs& args, json& parallel, const json& training,
                        std::vector<std::string>& notes) {
  const auto strategy = args.choice("--data-parallel-sharding-strategy",
                                    {"no_shard", "optim", "optim_grads", "optim_grads_params"});
  if (!args.enabled("--use-megatron-fsdp")) {
    if (strategy)
      notes.push_back(
          "--data-parallel-sharding-strategy has no effect without "
          "--use-megatron-fsdp");
    return;
  }
  const std::string name = strategy.value_or("optim_grads_params");
  const std::string sharding = name == "no_shard"      ? "none"
                               : name == "optim"       ? "optimizer"
                               : name == "optim_grads" ? "grads"
                                                       : "params";
  if ((sharding != "none") != training["distributed_optimizer"].get<bool>()) {
    args.fail("--use-megatron-fsdp",
              "--data-parallel-sharding-strategy " + name +
                  (sharding == "none" ? " does not shard the optimizer state, which "
                                        "--use-distributed-optimizer does"
                                      : " needs --use-distributed-optimizer (Megatron-FSDP's "
                                        "documented flags)"));
  }
  parallel["data_sharding"] = sharding;
}

// --num-distributed-optimizer-instances N: N copies of the sharded state, each sharded over
// dp·cp / N consecutive ranks (parallel.fsdp_shard_group).
void read_optimizer_instances(MegatronArgs& args, std::int64_t dp_cp, json& parallel,
                              const json& training) {
  const auto instances = args.integer("--num-distributed-optimizer-instances", 1);
  if (!instances || *instances == 1) return;
  if (!training["distributed_optimizer"].get<bool>()) {
    args.fail("--num-distributed-optimizer-instances", std::to_string(*instances),
              "needs --use-distributed-optimizer");
  }
  if (dp_cp % *instances != 0) {
    args.fail("--num-distributed-optimizer-instances", std::to_string(*instances),
              "must divide dp·cp = " + std::to_string(dp_cp));
  }
  parallel["fsdp_shard_group"] = dp_cp / *instances;
}

// --cpu-offloading (activations) with --cpu-offloading-num-layers N: the first N layers of each
// chunk (training.offload.layers; at most all but the chunk's last). --fine-grained-activation-
// offloading with --offload-modules: what those modules save (training.offload.activations as a
// list).
void read_offload(MegatronArgs& args, std::int64_t layers_per_chunk, json& training,
                  std::vector<std::string>& notes) {
  // --fine-grained-activation-offloading with --offload-modules: what those modules save.
  const bool fine_grained = args.enabled("--fine-grained-activation-offloading");
  const std::vector<std::string> modules = args.list("--offload-modules");
  if (fine_grained) {
    for (const std::string& name : modules) {
      const auto& known = offload_module_names();
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        args.fail("--offload-modules", name,
                  "must be among attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, "
                  "expert_fc1, moe_act");
      }
    }
    if (modules.empty()) {
      notes.push_back(
          "--fine-grained-activation-offloading without --offload-modules offloads nothing");
    } else {
      training["offload"] = {{"activations", modules}};
    }
    if (args.enabled("--cpu-offloading")) {
      args.fail("--cpu-offloading",
                "give --cpu-offloading or --fine-grained-activation-offloading, not both");
    }
    return;
  }
  if (!modules.empty()) {
    notes.push_back("--offload-modules has no effect without --fine-grained-activation-offloading");
  }
  const auto layers = args.integer("--cpu-offloading-num-layers", 0);
  if (!args.enabled("--cpu-offloading")) {
    if (layers)
      notes.push_back("--cpu-offloading-num-layers has no effect without --cpu-offloading");
    return;
  }
  training["offload"] = {{"activations", true}};
  if (layers && *layers > 0) training["offload"]["layers"] = *layers;
  if (!layers || *layers == 0 || *layers > layers_per_chunk - 1) {
    notes.push_back(
        "--cpu-offloading: wallsim offloads at most every decoder layer but the last of each "
        "chunk (" +
        std::to_string(layers_per_chunk - 1) + " per chunk here), not the " +
        std::to_string(layers.value_or(0)) + " of --cpu-offloading-num-layers");
  }
}

// --optimizer-cpu-offload with --optimizer-offload-fraction (Megatron's default 1.0) and
// --overlap-cpu-optimizer-d2h-h2d: the hybrid CPU optimizer (training.offload.optimizer_*).
void read_optimizer_offload(MegatronArgs& args, json& training, std::vector<std::string>& notes) {
  const bool offload = args.enabled("--optimizer-cpu-offload");
  const auto fraction = args.number("--optimizer-offload-fraction", 0, 1);
  const bool overlap = args.enabled("--overlap-cpu-optimizer-d2h-h2d");
  if (!offload) {
    if (fraction || overlap) {
      notes.push_back(
          "--optimizer-offload-fraction and --overlap-cpu-optimizer-d2h-h2d have no effect "
          "without --optimizer-cpu-offload");
    }
    return;
  }
  const double share = fraction.value_or(1.0);
  if (share == 0) {
    notes.push_back("--optimizer-cpu-offload with --optimizer-offload-fraction 0 offloads nothing");
    return;
  }
  training["offload"]["optimizer_fraction"] = share;
  if (overlap) training["offload"]["optimizer_overlap"] = true;
}

// --chunked-optimizer-state-offload (or its legacy spelling --offload-optimizer-states) with
// --optimizer-state-offload-fraction (default 1.0) and --optimizer-state-offload-chunk-size-mb
// (default 0: all at once): training.offload.optimizer_states, optimizer_state_chunk_mb.
void read_optimizer_state_offload(MegatronArgs& args, json& training,
                                  std::vector<std::string>& notes) {
  const bool chunked = args.enabled("--chunked-optimizer-state-offload");
  const bool legacy = args.enabled("--offload-optimizer-states");
  const auto fraction = args.number("--optimizer-state-offload-fraction", 0, 1);
  const auto chunk = args.number("--optimizer-state-offload-chunk-size-mb", 0, 1e12);
  if (!chunked && !legacy) {
    if (fraction || chunk) {
      notes.push_back(
          "--optimizer-state-offload-fraction and --optimizer-state-offload-chunk-size-mb have "
          "no effect without --chunked-optimizer-state-offload");
    }
    return;
  }
  const double share = fraction.value_or(1.0);
  if (share == 0) return;
  training["offload"]["optimizer_states"] = share;
  if (chunk && *chunk > 0) training["offload"]["optimizer_state_chunk_mb"] = *chunk;
}

// --use-precision-aware-optimizer and its dtypes (choices as in Megatron-LM's arguments.py);
// --main-grads-dtype bf16 leaves Megatron's accumulate_allreduce_grads_in_fp32 off, so the
// gradient buffer is bf16 as with --grad-reduce-in-bf16.
void read_optimizer_precision(MegatronArgs& args, json& training) {
  const bool aware = args.enabled("--use-precision-aware-optimizer");
  json optimizer;
  if (aware) optimizer["precision_aware"] = true;
  // Without the precision-aware optimizer Megatron asserts every one of these is fp32.
  const auto read = [&](const char* flag, std::initializer_list<std::string_view> allowed) {
    const auto dtype = args.choice(flag, allowed);
    if (dtype && *dtype != "fp32" && !aware) {
      args.fail(flag, *dtype, "needs --use-precision-aware-optimizer (fp32 without it)");
    }
    return dtype;
  };
  if (read("--main-grads-dtype", {"fp32", "bf16"}) == "bf16") {
    training["grad_reduce_dtype"] = "bf16";
  }
  if (const auto main = read("--main-params-dtype", {"fp32", "fp16"})) {
    optimizer["main_params_dtype"] = *main;
  }
  if (const auto m = read("--exp-avg-dtype", {"fp32", "fp16", "bf16", "fp8"})) {
    optimizer["exp_avg_dtype"] = *m;
  }
  if (const auto v = read("--exp-avg-sq-dtype", {"fp32", "fp16", "bf16", "fp8"})) {
    optimizer["exp_avg_sq_dtype"] = *v;
  }
  if (!optimizer.empty()) training["optimizer"] = optimizer;
}

json read_training(MegatronArgs& args, std::int64_t dp, std::int64_t layers_per_chunk,
                   const json& parallel, std::vector<std::string>& notes) {
  json training;
  const auto seq = args.integer("--seq-length");
  if (!seq) args.fail("--seq-length", "missing: Megatron needs the sequence length");
  const auto micro = args.integer("--micro-batch-size");
  if (!micro) args.fail("--micro-batch-size", "missing: Megatron needs the micro-batch size");
  training["seq_len"] = *seq;
  training["micro_batch"] = *micro;
  // Megatron's default global batch: one micro-batch per data-parallel rank.
  training["global_batch"] = args.integer("--global-batch-size").value_or(*micro * dp);
  training["precision"] = read_precision(args, notes);
  read_recompute(args, layers_per_chunk, training, notes);
  training["distributed_optimizer"] = args.enabled("--use-distributed-optimizer");
  if (args.enabled("--grad-reduce-in-bf16")) training["grad_reduce_dtype"] = "bf16";
  read_optimizer_precision(args, training);
  read_overlap(args, parallel, training);
  read_kernels(args, training, notes);
  read_offload(args, layers_per_chunk, training, notes);
  read_optimizer_offload(args, training, notes);
  read_optimizer_state_offload(args, training, notes);
  return training;
}

}  // namespace

void read_megatron_layout(MegatronArgs& args, std::int64_t num_gpus, json& config,
                          std::vector<std::string>& notes) {
  const json& model = config["model"];
  json parallel = read_parallel(args, model, notes);
  const std::int64_t model_parallel = parallel["tp"].get<std::int64_t>() *
                                      parallel["cp"].get<std::int64_t>() *
                                      parallel["pp"].get<std::int64_t>();
  const std::int64_t dp = std::max<std::int64_t>(1, num_gpus / model_parallel);
  const std::int64_t chunks = parallel["pp"].get<std::int64_t>() * parallel.value("vpp", 1);
  const std::int64_t layers_per_chunk = (model["layers"].get<std::int64_t>() + chunks - 1) / chunks;
  config["training"] = read_training(args, dp, layers_per_chunk, parallel, notes);
  read_data_sharding(args, parallel, config["training"], notes);
  read_optimizer_instances(args, dp * parallel["cp"].get<std::int64_t>(), parallel,
                           config["training"]);
  config["parallel"] = parallel;
}

}  // namespace wallsim::models
