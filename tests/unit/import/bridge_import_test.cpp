#include "models/launch_args/bridge_import.hpp"

#include <catch2/catch.hpp>

#include "models/flops.hpp"
#include "models/parameter_count.hpp"
#include "models/run_config.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "tests/unit/import/import_test_support.hpp"

using Catch::Matchers::Contains;
using nlohmann::json;
using namespace wallsim;
using namespace wallsim::models;

using namespace wallsim::test;

namespace {

MegatronImportOptions gpus(std::int64_t count) {
  MegatronImportOptions options;
  options.num_gpus = count;
  return options;
}

// A small ConfigContainer: the fields a dump always has for these sections, with `extra`
// lines added to the model section.
std::string container(const std::string& extra_model, const std::string& rest = "") {
  return "model:\n"
         "  num_layers: 4\n"
         "  hidden_size: 256\n"
         "  ffn_hidden_size: 1024\n"
         "  num_attention_heads: 4\n"
         "  num_query_groups: 4\n"
         "  vocab_size: 1000\n"
         "  seq_length: 128\n"
         "  gated_linear_unit: false\n"
         "  normalization: LayerNorm\n"
         "  hidden_dropout: 0.0\n"
         "  attention_dropout: 0.0\n"
         "  share_embeddings_and_output_weights: true\n"
         "  add_bias_linear: false\n"
         "  tensor_model_parallel_size: 1\n"
         "  moe_router_topk: 2\n"
         "  bf16: true\n"
         "  fp16: false\n"
         "  fp8: null\n" +
         extra_model +
         "train:\n"
         "  micro_batch_size: 1\n"
         "  global_batch_size: 8\n"
         "ddp:\n"
         "  use_distributed_optimizer: true\n"
         "  grad_reduce_in_fp32: true\n" +
         rest;
}

}  // namespace

TEST_CASE("Megatron-Bridge's Llama 3 8B SFT config imports to Llama 3 8B in FP8") {
  const MegatronImport imported = import_bridge_file(
      source_path("tests/data/bridge/llama3_8b_sft_gb200_fp8_mx_v1.yaml"), gpus(8));
  const RunConfig config = load(imported);
  const json shipped = load_json_file(source_path("configs/models/llama3-8b.json"));
  const ModelSpec llama = parse_model_spec(JsonNode(shipped, "llama3-8b", ""));
  CHECK(total_parameters(config.model, 1) == total_parameters(llama, 1));
  CHECK(iteration_flops(config.model, config.training, 1, 8).model_per_iteration ==
        iteration_flops(llama, config.training, 1, 8).model_per_iteration);
  // mixed_precision (fp8 e4m3, grad_reduce_in_fp32 true) overrides model.fp8 null and
  // ddp.grad_reduce_in_fp32 false, as MixedPrecisionConfig.setup does.
  CHECK(config.training.precision == Dtype::kFp8);
  CHECK(config.training.grad_reduce_dtype == Dtype::kFp32);
  // The dataset's 4096-token sequences, not model.seq_length.
  CHECK(config.training.seq_len == 4096);
  CHECK(warned(imported,
               "the dataset's sequence length 4096 is simulated; model.seq_length is "
               "16384"));
  CHECK(config.training.distributed_optimizer);
  CHECK(config.training.cross_entropy_fusion == CrossEntropyFusion::kNative);
  CHECK(config.training.global_batch == 8);
  CHECK(warned(imported,
               "not modelled (they change step time or memory, wallsim ignores them): "
               "model.fp8_param, model.fp8_recipe, train.manual_gc"));
  CHECK(warned(imported, "model fields set but not read by wallsim: apply_rope_fusion"));
}

TEST_CASE("a mixed-precision recipe name sets the precision fields it names") {
  const RunConfig fp8 = load(import_bridge_yaml(
      container("") + "mixed_precision: bf16_with_fp8_delayed_scaling_mixed\n", "c.yaml", gpus(4)));
  CHECK(fp8.training.precision == Dtype::kFp8);
  const MegatronImport fp16 = import_bridge_yaml(
      container("  fp16: false\n") + "mixed_precision: fp16-mixed\n", "c.yaml", gpus(4));
  CHECK(load(fp16).training.grad_reduce_dtype == Dtype::kBf16);  // fp16_mixed: not in fp32
  CHECK(warned(fp16, "model.fp16 is simulated as bf16"));
  CHECK_THROWS_WITH(
      import_bridge_yaml(container("") + "mixed_precision: fp7_mixed\n", "c.yaml", gpus(4)),
      Contains("c.yaml:26: mixed_precision = fp7_mixed: must be one of bf16_mixed"));
}

TEST_CASE("Bridge's optimizer dtypes map to the precision-aware optimizer's options") {
  // Bridge dumps torch dtypes as {_call_: false, _target_: torch.bfloat16}; torch.uint8 is
  // Megatron's fp8.
  const std::string optimizer =
      "optimizer:\n"
      "  use_precision_aware_optimizer: true\n"
      "  main_params_dtype:\n    _call_: false\n    _target_: torch.float32\n"
      "  exp_avg_dtype:\n    _call_: false\n    _target_: torch.bfloat16\n"
      "  exp_avg_sq_dtype:\n    _call_: false\n    _target_: torch.uint8\n";
  const RunConfig config = load(import_bridge_yaml(container("", optimizer), "c.yaml", gpus(4)));
  CHECK(config.training.optimizer.precision_aware);
  CHECK(config.training.optimizer.main_params == StateDtype::kFp32);
  CHECK(config.training.optimizer.exp_avg == StateDtype::kBf16);
  CHECK(config.training.optimizer.exp_avg_sq == StateDtype::kFp8);
  CHECK_THROWS_WITH(
      import_bridge_yaml(container("", "optimizer:\n  exp_avg_dtype: torch.int8\n"), "c.yaml",
                         gpus(4)),
      Contains("optimizer.exp_avg_dtype") && Contains("float32, bfloat16, float16 or uint8"));
}

TEST_CASE("Bridge's MoE, MLA and parallelism fields map as their Megatron options do") {
  const RunConfig config =
      load(import_bridge_yaml(container("  num_moe_experts: 4\n"
                                        "  moe_ffn_hidden_size: 512\n"
                                        "  moe_layer_freq: [0, 1, 1, 1]\n"
                                        "  moe_grouped_gemm: true\n"
                                        "  moe_token_dispatcher_type: alltoall\n"
                                        "  expert_model_parallel_size: 2\n"
                                        "  expert_tensor_parallel_size: null\n"
                                        "  gated_linear_unit: true\n"
                                        "  activation_func:\n"
                                        "    _target_: torch.nn.functional.silu\n"
                                        "  recompute_granularity: full\n"
                                        "  recompute_method: uniform\n"
                                        "  recompute_num_layers: 1\n"),
                              "moe.yaml", gpus(4)));
  CHECK(config.model.moe->first_dense_layers == 1);
  CHECK(config.model.moe->ffn_hidden == 512);
  CHECK(config.model.activation == Activation::swiglu);
  CHECK(config.parallel.ep == 2);
  CHECK(config.parallel.etp == 1);  // null: expert TP = TP
  CHECK(config.layout.expert.grouped_gemm);
  CHECK(config.training.recompute == Recompute::full);
  CHECK(config.model.kv_heads == 4);  // num_query_groups = heads: no GQA
}

TEST_CASE("Bridge errors and warnings name Bridge's fields") {
  CHECK_THROWS_WITH(
      import_bridge_yaml(container("").replace(container("").find("size: 8"), 7, "size: 7"),
                         "c.yaml", gpus(4)),
      Contains("training.global_batch (train.global_batch_size) = 7"));
  const MegatronImport gelu =
      import_bridge_yaml(container("  activation_func:\n    _target_: torch.nn.functional.gelu\n"
                                   "  distribute_saved_activations: true\n") +
                             "logger:\n  log_interval: 1\n",
                         "c.yaml", gpus(4));
  CHECK(warned(gelu,
               "not modelled (they change step time or memory, wallsim ignores them): "
               "model.distribute_saved_activations"));
  CHECK(warned(gelu, "sections not read (no effect on step time or memory): logger"));
  const MegatronImport geglu = import_bridge_yaml(
      container("  gated_linear_unit: true\n  activation_func: torch.nn.functional.gelu\n"),
      "c.yaml", gpus(4));
  CHECK(warned(geglu, "model.activation_func gelu (gated) is not modelled: simulated as SwiGLU"));
}

TEST_CASE("a Bridge config without the GPU count, a model, or valid YAML is refused") {
  CHECK_THROWS_WITH(import_bridge_yaml(container(""), "c.yaml", {}),
                    Contains("give wallsim import --num-gpus N"));
  CHECK_THROWS_WITH(import_bridge_yaml("train:\n  micro_batch_size: 1\n", "c.yaml", gpus(4)),
                    Contains("c.yaml: model: missing"));
  CHECK_THROWS_WITH(import_bridge_yaml("model: [1,\n", "c.yaml", gpus(4)),
                    Contains("c.yaml:") && Contains("not YAML"));
  CHECK_THROWS_WITH(import_bridge_yaml("- 1\n", "c.yaml", gpus(4)),
                    Contains("must be a YAML mapping"));
}

// The model section's fixed fields fill lines 1-19 of container(), so the extra line is line 20.
TEST_CASE("a ConfigContainer that is not UTF-8 is rejected with its line", "[import][bridge]") {
  const std::string text = container("  name: caf\xE9\n");  // Latin-1, not UTF-8
  CHECK_THROWS_WITH(import_bridge_yaml(text, "c.yaml", gpus(8)),
                    Contains("c.yaml:20") && Contains("not UTF-8"));
}

TEST_CASE("Bridge's offloading fields map as their Megatron options do") {
  // Megatron-Bridge's 70B FSDP recipes set cpu_offloading with cpu_offloading_num_layers; the
  // fine-grained form names modules. 4 layers at pp 1: the first 2 offloaded.
  const RunConfig layers = load(import_bridge_yaml(
      container("  cpu_offloading: true\n  cpu_offloading_num_layers: 2\n"), "c.yaml", gpus(4)));
  CHECK(layers.training.offload_activations);
  CHECK(layers.training.offload_modules.empty());
  CHECK(layers.training.offload_layers == 2);
  const RunConfig modules =
      load(import_bridge_yaml(container("  fine_grained_activation_offloading: true\n"
                                        "  offload_modules: [core_attn, attn_proj]\n"),
                              "c.yaml", gpus(4)));
  CHECK(modules.training.offload_modules == std::vector<std::string>{"core_attn", "attn_proj"});
}
