#include "models/launch_args/bridge_fields.hpp"

#include <algorithm>

namespace wallsim::models {
namespace {

using K = BridgeField::Kind;
using G = BridgeField::Gate;

struct Recipe {
  const char* name;
  bool fp16;
  const char* fp8;  // nullptr: none
  const char* fp8_recipe;
  bool first_last_layers_bf16;
};

// Bridge's registered recipes (mixed_precision.py at NVIDIA-NeMo/Megatron-Bridge commit
// 05097809102de3cbe888267e7d701868165153d8): bf16 or fp16 with grad_reduce_in_fp32 true for
// bf16 and false for fp16; the FP8 ones gather FP8 parameters except the subchannel ones.
constexpr Recipe kRecipes[] = {
    {"bf16_mixed", false, nullptr, "tensorwise", false},
    {"fp16_mixed", true, nullptr, "tensorwise", false},
    {"bf16_with_fp8_delayed_scaling_mixed", false, "hybrid", "delayed", false},
    {"fp16_with_fp8_delayed_scaling_mixed", true, "hybrid", "delayed", false},
    {"bf16_with_mxfp8_mixed", false, "e4m3", "mxfp8", false},
    {"fp16_with_mxfp8_mixed", true, "e4m3", "mxfp8", false},
    {"bf16_with_fp8_current_scaling_mixed", false, "hybrid", "tensorwise", true},
    {"nemotron_h_bf16_with_fp8_current_scaling_mixed", false, "hybrid", "tensorwise", true},
    {"nanov2_bf16_with_fp8_current_scaling_mixed", false, "hybrid", "blockwise", true},
    {"fp16_with_fp8_current_scaling_mixed", true, "hybrid", "tensorwise", true},
    {"bf16_with_fp8_subchannel_scaling_mixed", false, "hybrid", "blockwise", false},
    {"fp16_with_fp8_subchannel_scaling_mixed", true, "hybrid", "blockwise", false},
};

}  // namespace

const std::vector<BridgeField>& bridge_fields() {
  static const std::vector<BridgeField> fields = {
      // Model shape.
      {"model", "num_layers", "--num-layers"},
      {"model", "hidden_size", "--hidden-size"},
      {"model", "ffn_hidden_size", "--ffn-hidden-size"},
      {"model", "num_attention_heads", "--num-attention-heads"},
      {"model", "num_query_groups", "--num-query-groups", K::kCustom},
      {"model", "kv_channels", "--kv-channels"},
      {"model", "vocab_size", "--vocab-size", K::kCustom},
      {"model", "seq_length", "--seq-length", K::kCustom},
      {"model", "gated_linear_unit", "--swiglu", K::kCustom},
      {"model", "activation_func", "--swiglu", K::kCustom},
      {"model", "normalization", "--normalization"},
      {"model", "share_embeddings_and_output_weights", "--untie-embeddings-and-output-weights",
       K::kOffSwitch},
      {"model", "add_bias_linear", "--disable-bias-linear", K::kOffSwitch},
      {"model", "add_qkv_bias", "--add-qkv-bias", K::kSwitch},
      {"model", "make_vocab_size_divisible_by", "--make-vocab-size-divisible-by", K::kNonDefault,
       G::kAlways, "128"},
      {"model", "hidden_dropout", "--hidden-dropout"},
      {"model", "attention_dropout", "--attention-dropout"},
      {"model", "qk_layernorm", "--qk-layernorm", K::kSwitch},
      // Parallelism.
      {"model", "tensor_model_parallel_size", "--tensor-model-parallel-size"},
      {"model", "pipeline_model_parallel_size", "--pipeline-model-parallel-size"},
      {"model", "context_parallel_size", "--context-parallel-size"},
      {"model", "sequence_parallel", "--sequence-parallel", K::kSwitch},
      {"model", "virtual_pipeline_model_parallel_size", "--num-virtual-stages-per-pipeline-rank"},
      {"model", "num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers"},
      {"model", "num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers"},
      {"model", "pipeline_model_parallel_layout", "--pipeline-model-parallel-layout"},
      {"model", "account_for_embedding_in_pipeline_split",
       "--account-for-embedding-in-pipeline-split", K::kSwitch},
      {"model", "account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split",
       K::kSwitch},
      {"model", "cp_comm_type", "--cp-comm-type", K::kList},
      {"model", "hierarchical_context_parallel_sizes", "--hierarchical-context-parallel-sizes",
       K::kList},
      {"model", "expert_model_parallel_size", "--expert-model-parallel-size", K::kValue, G::kMoe},
      {"model", "expert_tensor_parallel_size", "--expert-tensor-parallel-size", K::kValue, G::kMoe},
      // Recompute, overlap, kernels, offloading.
      {"model", "recompute_granularity", "--recompute-granularity"},
      {"model", "recompute_method", "--recompute-method"},
      {"model", "recompute_num_layers", "--recompute-num-layers"},
      {"model", "recompute_modules", "--recompute-modules", K::kList},
      {"model", "distribute_saved_activations", "--distribute-saved-activations", K::kSwitch},
      {"model", "tp_comm_overlap", "--tp-comm-overlap", K::kSwitch},
      {"model", "overlap_moe_expert_parallel_comm", "--overlap-moe-expert-parallel-comm",
       K::kSwitch, G::kMoe},
      {"model", "delay_wgrad_compute", "--delay-wgrad-compute", K::kSwitch},
      {"model", "cross_entropy_loss_fusion", "--cross-entropy-loss-fusion", K::kSwitch},
      {"model", "cross_entropy_fusion_impl", "--cross-entropy-fusion-impl", K::kValue,
       G::kCrossEntropyFusion},
      {"model", "attention_backend", "--attention-backend", K::kCustom},
      {"model", "enable_cuda_graph", "--enable-cuda-graph", K::kSwitch},
      {"model", "external_cuda_graph", "--external-cuda-graph", K::kSwitch},
      {"model", "cuda_graph_impl", "--cuda-graph-impl"},
      {"model", "cuda_graph_scope", "--cuda-graph-scope", K::kList},
      {"model", "cpu_offloading", "--cpu-offloading", K::kSwitch},
      {"model", "cpu_offloading_num_layers", "--cpu-offloading-num-layers", K::kValue},
      {"model", "fine_grained_activation_offloading", "--fine-grained-activation-offloading",
       K::kSwitch},
      {"model", "offload_modules", "--offload-modules", K::kList},
      // Precision (after the mixed_precision section overrode these).
      {"model", "bf16", "--bf16", K::kSwitch},
      {"model", "fp16", "--fp16", K::kSwitch},
      {"model", "fp8", "--fp8-format"},
      {"model", "fp8_recipe", "--fp8-recipe", K::kValue, G::kFp8},
      {"model", "fp8_param", "--fp8-param-gather", K::kSwitch, G::kFp8},
      // Mixture of experts.
      {"model", "num_moe_experts", "--num-experts"},
      {"model", "moe_router_topk", "--moe-router-topk", K::kValue, G::kMoe},
      {"model", "moe_ffn_hidden_size", "--moe-ffn-hidden-size", K::kValue, G::kMoe},
      {"model", "moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size",
       K::kValue, G::kMoe},
      {"model", "moe_layer_freq", "--moe-layer-freq", K::kCustom, G::kMoe},
      {"model", "moe_router_score_function", "--moe-router-score-function", K::kValue, G::kMoe},
      {"model", "moe_expert_capacity_factor", "--moe-expert-capacity-factor", K::kValue, G::kMoe},
      {"model", "moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity",
       K::kSwitch, G::kMoe},
      {"model", "moe_router_fusion", "--moe-router-fusion", K::kSwitch, G::kMoe},
      {"model", "moe_router_num_groups", "--moe-router-num-groups", K::kValue, G::kMoe},
      {"model", "moe_router_group_topk", "--moe-router-group-topk", K::kValue, G::kMoe},
      {"model", "moe_token_dispatcher_type", "--moe-token-dispatcher-type", K::kValue, G::kMoe},
      {"model", "moe_grouped_gemm", "--moe-grouped-gemm", K::kSwitch, G::kMoe},
      {"model", "moe_router_load_balancing_type", "--moe-router-load-balancing-type", K::kValue,
       G::kMoe},
      {"model", "moe_shared_expert_overlap", "--moe-shared-expert-overlap", K::kSwitch, G::kMoe},
      {"model", "moe_permute_fusion", "--moe-permute-fusion", K::kSwitch, G::kMoe},
      {"model", "moe_router_force_load_balancing", "--moe-router-force-load-balancing", K::kSwitch,
       G::kMoe},
      // Multi-head latent attention, multi-token prediction.
      {"model", "multi_latent_attention", "--multi-latent-attention", K::kSwitch},
      {"model", "q_lora_rank", "--q-lora-rank", K::kValue, G::kMla},
      {"model", "kv_lora_rank", "--kv-lora-rank", K::kValue, G::kMla},
      {"model", "qk_head_dim", "--qk-head-dim", K::kValue, G::kMla},
      {"model", "qk_pos_emb_head_dim", "--qk-pos-emb-head-dim", K::kValue, G::kMla},
      {"model", "v_head_dim", "--v-head-dim", K::kValue, G::kMla},
      {"model", "mtp_num_layers", "--mtp-num-layers"},
      // Batch.
      {"train", "micro_batch_size", "--micro-batch-size"},
      {"train", "global_batch_size", "--global-batch-size"},
      {"train", "rampup_batch_size", "--rampup-batch-size", K::kList},
      {"train", "manual_gc", "--manual-gc", K::kSwitch},
      {"train", "empty_unused_memory_level", "--empty-unused-memory-level", K::kNonDefault,
       G::kAlways, "0"},
      // Data parallelism and the optimizer.
      {"ddp", "use_distributed_optimizer", "--use-distributed-optimizer", K::kSwitch},
      {"ddp", "overlap_grad_reduce", "--overlap-grad-reduce", K::kSwitch},
      {"ddp", "overlap_param_gather", "--overlap-param-gather", K::kSwitch},
      {"ddp", "grad_reduce_in_fp32", "--grad-reduce-in-bf16", K::kOffSwitch},
      {"ddp", "use_megatron_fsdp", "--use-megatron-fsdp", K::kSwitch},
      {"ddp", "use_custom_fsdp", "--use-megatron-fsdp", K::kSwitch},
      {"ddp", "data_parallel_sharding_strategy", "--data-parallel-sharding-strategy",
       K::kNonDefault, G::kAlways, "no_shard"},
      {"ddp", "num_distributed_optimizer_instances", "--num-distributed-optimizer-instances",
       K::kNonDefault, G::kAlways, "1"},
      {"ddp", "bucket_size", "--ddp-bucket-size"},
      {"ddp", "average_in_collective", "--ddp-average-in-collective", K::kSwitch},
      {"ddp", "fp8_param_gather", "--fp8-param-gather", K::kSwitch},
      {"optimizer", "use_distributed_optimizer", "--use-distributed-optimizer", K::kSwitch},
      {"optimizer", "optimizer", "--optimizer", K::kNonDefault, G::kAlways, "adam"},
      {"optimizer", "optimizer_cpu_offload", "--optimizer-cpu-offload", K::kSwitch},
      {"optimizer", "optimizer_offload_fraction", "--optimizer-offload-fraction"},
      {"optimizer", "overlap_cpu_optimizer_d2h_h2d", "--overlap-cpu-optimizer-d2h-h2d", K::kSwitch},
      {"optimizer", "use_precision_aware_optimizer", "--use-precision-aware-optimizer", K::kSwitch},
      {"optimizer", "main_grads_dtype", "--main-grads-dtype", K::kCustom},
      {"optimizer", "main_params_dtype", "--main-params-dtype", K::kCustom},
      {"optimizer", "exp_avg_dtype", "--exp-avg-dtype", K::kCustom},
      {"optimizer", "exp_avg_sq_dtype", "--exp-avg-sq-dtype", K::kCustom},
      {"dist", "use_tp_pp_dp_mapping", "--use-tp-pp-dp-mapping", K::kSwitch},
      {"dist", "use_torch_fsdp2", "--use-torch-fsdp2", K::kSwitch},
      {"comm_overlap", "tp_comm_overlap", "--tp-comm-overlap", K::kSwitch},
  };
  return fields;
}

std::optional<BridgePrecisionRecipe> bridge_precision_recipe(const std::string& name) {
  std::string key = name;
  std::replace(key.begin(), key.end(), '-', '_');
  const auto it = std::find_if(std::begin(kRecipes), std::end(kRecipes),
                               [&](const Recipe& r) { return key == r.name; });
  if (it == std::end(kRecipes)) return std::nullopt;
  const bool fp8 = it->fp8 != nullptr;
  const bool subchannel =
      fp8 && std::string(it->fp8_recipe) == "blockwise" && !it->first_last_layers_bf16;
  return BridgePrecisionRecipe{
      {{"bf16", it->fp16 ? "false" : "true"},
       {"fp16", it->fp16 ? "true" : "false"},
       {"grad_reduce_in_fp32", it->fp16 ? "false" : "true"},
       {"fp8", fp8 ? it->fp8 : "null"},
       {"fp8_recipe", it->fp8_recipe},
       {"fp8_param", fp8 && !subchannel ? "true" : "false"},
       {"fp8_param_gather", fp8 && !subchannel ? "true" : "false"},
       {"first_last_layers_bf16", it->first_last_layers_bf16 ? "true" : "false"}}};
}

std::string bridge_precision_recipe_names() {
  std::string names;
  for (const Recipe& r : kRecipes) names += (names.empty() ? "" : ", ") + std::string(r.name);
  return names;
}

}  // namespace wallsim::models
