#include "models/launch_args/megatron_import.hpp"

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

MegatronImport import_text(const std::string& text, std::int64_t gpus = 4) {
  MegatronImportOptions options;
  options.num_gpus = gpus;
  return import_megatron_args(text, "args.txt", options);
}

RunConfig shipped_example(const std::string& name) {
  return load_run_config(source_path("configs/examples/" + name + ".json"));
}

// A small dense job every test varies: 4 GPUs, so dp = 4 at tp = cp = pp = 1.
const std::string kSmall =
    "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --vocab-size 1000 "
    "--seq-length 128 --micro-batch-size 2 --bf16 ";

}  // namespace

TEST_CASE("Megatron-LM's Mixtral 8x7B script imports to the shipped model and example layout") {
  MegatronImportOptions options;
  options.num_gpus = 64;
  options.vocab = 32000;  // Llama2Tokenizer (the script names a tokenizer file, not a size)
  const MegatronImport imported = import_megatron_args_file(
      source_path("tests/data/megatron_args/train_mixtral_8x7b_distributed.sh"), options);
  const RunConfig config = load(imported);
  const ModelSpec mixtral = shipped_model("mixtral-8x7b");
  CHECK(total_parameters(config.model, 1) == total_parameters(mixtral, 1));
  CHECK(active_parameters(config.model, 1) == active_parameters(mixtral, 1));
  // configs/examples/mixtral-8x7b-64gpu.json is this layout (tp 1, pp 4, ep 8, dp 16, seq 4096,
  // global batch 256) with selective recompute, so the model FLOPs agree and only the hardware
  // FLOPs (recompute) differ.
  const RunConfig example = shipped_example("mixtral-8x7b-64gpu");
  CHECK(iteration_flops(config.model, config.training, 1, 64).model_per_iteration ==
        iteration_flops(example.model, example.training, 1, 64).model_per_iteration);
  CHECK(config.layout.sizes.dp == example.layout.sizes.dp);
  CHECK(config.layout.expert.ep == 8);
  CHECK(config.layout.expert.grouped_gemm);
  CHECK(config.parallel.moe_dispatcher == MoeDispatcher::kAllToAll);
  CHECK(config.training.overlap.dp_param_gather);
  CHECK(warned(imported, "lines 105-110 (if … fi) are not evaluated"));
  CHECK(warned(imported, "--moe-router-load-balancing-type"));
  CHECK(warned(imported, "--save $1"));  // CHECKPOINT_PATH=$1: a value wallsim does not read
}

TEST_CASE("the Mixtral script's own GPU count (torchrun, 8 GPUs) cannot hold its layout") {
  MegatronImportOptions options;
  options.vocab = 32000;
  // --nproc_per_node 8 --nnodes 1 = 8 GPUs; ep 8 · pp 4 = 32 ranks of experts do not fit.
  CHECK_THROWS_WITH(
      import_megatron_args_file(
          source_path("tests/data/megatron_args/train_mixtral_8x7b_distributed.sh"), options),
      Contains("parallel.ep (--expert-model-parallel-size) = 8") &&
          Contains("etp·ep·pp = 1·8·4 = 32"));
}

TEST_CASE("Megatron-LM's Llama 3 8B FP8 launch line imports to Llama 3 8B plus the null token") {
  const MegatronImport imported = import_megatron_args_file(
      source_path("tests/data/megatron_args/train_llama3_8b_h100_fp8.args"), {});
  const RunConfig config = load(imported);
  CHECK(config.num_gpus == 8);  // torchrun --nproc_per_node 8 --nnodes 1
  // NullTokenizer adds its end-of-document token: vocabulary 128257, padded to 128384 (128·tp)
  // where the shipped Llama 3 8B pads 128256 to itself. Untied: input and output embeddings
  // each gain 128 rows of h = 4096. The script gives no --normalization, so Megatron builds
  // LayerNorm (its default), whose bias adds h parameters to each of the 2·32 + 1 norms that
  // RMSNorm has without.
  const ModelSpec llama = shipped_model("llama3-8b");
  CHECK(config.model.vocab == 128257);
  CHECK(config.model.norm == Norm::layernorm);
  CHECK(total_parameters(config.model, 1) - total_parameters(llama, 1) ==
        2.0 * 128 * 4096 + 65.0 * 4096);
  // Logits FLOPs: 6·tokens·h·V_padded (forward and two backward GEMMs), tokens = 128·8192.
  TrainingSpec same = config.training;
  CHECK(iteration_flops(config.model, same, 1, 8).model_per_iteration -
            iteration_flops(llama, same, 1, 8).model_per_iteration ==
        Approx(6.0 * 128 * 8192 * 4096 * 128));
  CHECK(config.training.precision == Dtype::kFp8);
  CHECK(config.training.attention_backend ==
        AttentionBackend::kCudnn);  // --attention-backend fused
  CHECK(config.training.cross_entropy_fusion == CrossEntropyFusion::kNative);
  CHECK(config.training.grad_reduce_dtype == Dtype::kBf16);
  CHECK(config.training.distributed_optimizer);
  CHECK(config.training.global_batch == 128);
  CHECK(warned(imported, "not modelled"));
  CHECK(warned(imported, "--fp8-param-gather"));
  CHECK(imported.layout_notes.size() == 1);  // --sequence-parallel at tp 1 is switched off
}

TEST_CASE("the Llama 3 8B FP8 script and its expanded launch line import to the same config") {
  // The script's if-blocks pick the FP8 options (DTYPE="fp8") and the mock-data options
  // (TOKENIZER_ARG defaults to "MOCK"); the check for pretrain_gpt.py on disk is skipped.
  const MegatronImport script = import_megatron_args_file(
      source_path("tests/data/megatron_args/train_llama3_8b_h100_fp8.sh"), {});
  const MegatronImport expanded = import_megatron_args_file(
      source_path("tests/data/megatron_args/train_llama3_8b_h100_fp8.args"), {});
  json a = script.config;
  json b = expanded.config;
  for (json* config : {&a, &b}) {
    config->erase("description");
    (*config)["model"].erase("name");
    (*config)["model"].erase("source");
  }
  CHECK(a == b);
  CHECK(warned(script, "lines 182-186 (if … fi) are not evaluated"));
  CHECK(warned(script, "--data-cache-path ${PWD}/benchmark_cache_llama3_8b_fp8"));
}

TEST_CASE("Megatron-LM's GPT-3 175B script imports to the shipped GPT-3 175B") {
  MegatronImportOptions options;
  options.num_gpus = 1024;
  options.vocab = 50257;  // GPT-2 BPE (the script names --vocab-file and --merge-file)
  const MegatronImport imported = import_megatron_args_file(
      source_path("tests/data/megatron_args/train_gpt3_175b_distributed.sh"), options);
  const RunConfig config = load(imported);
  // 50257 padded to a multiple of 128·tp = 1024 is 51200, the vocabulary the shipped model
  // states (Korthikanti et al. Table 3); GeLU, LayerNorm, tied embeddings and dropout 0.1 are
  // Megatron's defaults, which the script does not change.
  const ModelSpec gpt3 = shipped_model("gpt3-175b");
  CHECK(total_parameters(config.model, 8) == total_parameters(gpt3, 8));
  CHECK(iteration_flops(config.model, config.training, 8, 1024).model_per_iteration ==
        iteration_flops(gpt3, config.training, 8, 1024).model_per_iteration);
  CHECK(config.model.hidden_dropout == gpt3.hidden_dropout);
  CHECK(config.layout.sizes.pp == 16);
  CHECK(config.layout.num_microbatches == 1536 / 8);  // dp = 1024 / (8 · 16) = 8
  CHECK_FALSE(config.training.attention_backend);     // --attention-backend auto
  CHECK(warned(imported, "--fp16 is simulated as bf16"));
  CHECK(warned(imported, "--rampup-batch-size"));
  CHECK(warned(imported, "--vocab-file $3"));
}

TEST_CASE("DeepSeek-V3's shape, MLA, MTP and layer pattern import to the shipped model") {
  // The arguments of configs/models/deepseek-v3.json, with a pipeline layout of 8 stages:
  // 4 + 6·8 + 9 = 61 decoder layers, the MTP layer and the loss on the last.
  const std::string args =
      "--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432 --num-attention-heads 128 "
      "--vocab-size 129280 --swiglu --normalization RMSNorm --untie-embeddings-and-output-weights "
      "--disable-bias-linear --attention-dropout 0.0 --hidden-dropout 0.0 "
      "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 "
      "--qk-pos-emb-head-dim 64 --v-head-dim 128 --kv-channels 128 --mtp-num-layers 1 "
      "--num-experts 256 --moe-router-topk 8 --moe-ffn-hidden-size 2048 "
      "--moe-shared-expert-intermediate-size 2048 --moe-layer-freq '([0]*3+[1]*58)' "
      "--moe-router-score-function sigmoid --moe-router-num-groups 8 --moe-router-group-topk 4 "
      "--moe-token-dispatcher-type flex --moe-grouped-gemm --tensor-model-parallel-size 2 "
      "--sequence-parallel --pipeline-model-parallel-size 8 "
      "--pipeline-model-parallel-layout 'Et*4|(t*8|)*6,t*9mL' --expert-model-parallel-size 64 "
      "--expert-tensor-parallel-size 1 --seq-length 4096 --micro-batch-size 1 "
      "--global-batch-size 2048 --bf16 --use-distributed-optimizer";
  const MegatronImport imported = import_text(args, 1024);
  const RunConfig config = load(imported);
  const ModelSpec deepseek = shipped_model("deepseek-v3");
  CHECK(total_parameters(config.model, 2) == total_parameters(deepseek, 2));
  CHECK(active_parameters(config.model, 2) == active_parameters(deepseek, 2));
  CHECK(iteration_flops(config.model, config.training, 2, 1024).model_per_iteration ==
        iteration_flops(deepseek, config.training, 2, 1024).model_per_iteration);
  CHECK(config.model.moe->first_dense_layers == 3);
  CHECK(config.model.moe->router_groups == deepseek.moe->router_groups);
  CHECK(config.model.moe->router_group_topk == deepseek.moe->router_group_topk);
  CHECK(config.layout.vpp == 1);
  CHECK(warned(imported, "--kv-channels is not used with --multi-latent-attention"));
}

TEST_CASE("absent options take Megatron's defaults, not wallsim's") {
  const RunConfig config = load(import_text(kSmall));
  CHECK(config.model.activation == Activation::gelu);
  CHECK(config.model.norm == Norm::layernorm);
  CHECK(config.model.tied_embeddings);
  CHECK(config.model.hidden_dropout == 0.1);  // arguments.py: --hidden-dropout 0.1
  CHECK(config.model.attention_dropout == 0.1);
  CHECK(config.model.kv_heads == 4);
  CHECK(config.training.global_batch == 8);  // micro-batch 2 · dp 4
  CHECK(config.training.recompute == Recompute::none);
  CHECK_FALSE(config.training.distributed_optimizer);
  const RunConfig moe = load(import_text(kSmall + "--num-experts 4 --tensor-model-parallel-size 2 "
                                                  "--sequence-parallel"));
  CHECK(moe.model.moe->topk == 2);
  CHECK(moe.parallel.moe_dispatcher == MoeDispatcher::kAllGather);
  CHECK_FALSE(moe.layout.expert.grouped_gemm);
  CHECK(moe.parallel.etp == 2);  // expert TP defaults to TP
  CHECK(load(import_text(kSmall + "--group-query-attention")).model.kv_heads == 1);
}

TEST_CASE("parallelism, recompute and kernel options map to their run config keys") {
  const RunConfig config = load(import_text(
      kSmall +
          "--num-layers 8 --pipeline-model-parallel-size 2 "
          "--num-layers-per-virtual-pipeline-stage 2 --tensor-model-parallel-size 2 "
          "--sequence-parallel --context-parallel-size 2 --cp-comm-type a2a+p2p "
          "--hierarchical-context-parallel-sizes 2 1 --recompute-granularity selective "
          "--recompute-modules core_attn mlp --use-distributed-optimizer --overlap-grad-reduce "
          "--overlap-param-gather --tp-comm-overlap --attention-backend flash "
          "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te --global-batch-size 16",
      16));
  CHECK(config.parallel.pp == 2);
  CHECK(config.parallel.vpp == 2);  // 8 layers / (pp 2 · 2 per virtual stage)
  CHECK(config.parallel.cp_comm_type == CpCommType::kA2aP2p);
  CHECK(config.parallel.hierarchical_cp == std::array<std::int64_t, 2>{2, 1});
  CHECK(config.training.recompute_modules == std::vector<std::string>{"core_attn", "mlp"});
  CHECK(config.training.overlap.tp_comm);
  CHECK(config.training.attention_backend == AttentionBackend::kFlash2);
  CHECK(config.training.cross_entropy_fusion == CrossEntropyFusion::kTe);
  const RunConfig full = load(import_text(kSmall + "--recompute-granularity full "
                                                   "--recompute-method block "
                                                   "--recompute-num-layers 4 --cuda-graph-impl "
                                                   "local --use-tp-pp-dp-mapping"));
  CHECK(full.training.recompute == Recompute::full);
  CHECK(full.training.cuda_graphs == CudaGraphs::kPerLayer);
  CHECK(full.parallel.order[3] == Axis::pp);
}

TEST_CASE("the shared-expert overlap switch imports to training.overlap.shared_expert") {
  // Megatron reads the switch only with shared experts and only with the alltoall or flex
  // dispatcher (transformer_config.py refuses it with allgather).
  const std::string moe = kSmall +
                          "--num-experts 4 --expert-model-parallel-size 4 "
                          "--moe-shared-expert-intermediate-size 512 ";
  const MegatronImport imported =
      import_text(moe + "--moe-token-dispatcher-type alltoall --moe-shared-expert-overlap");
  const RunConfig config = load(imported);
  CHECK(config.training.overlap.shared_expert);
  CHECK_FALSE(warned(imported, "--moe-shared-expert-overlap"));
  CHECK_FALSE(load(import_text(moe + "--moe-token-dispatcher-type alltoall"))
                  .training.overlap.shared_expert);
  CHECK_THROWS_WITH(import_text(moe + "--moe-shared-expert-overlap"),
                    Contains("--moe-shared-expert-overlap") && Contains("alltoall or flex"));
  // Without shared experts Megatron never reads it, and neither does the import.
  CHECK_FALSE(load(import_text(kSmall + "--num-experts 4 --moe-token-dispatcher-type alltoall "
                                        "--moe-shared-expert-overlap"))
                  .training.overlap.shared_expert);
}

TEST_CASE("moe-layer-freq integers and list expressions map to layer_freq or first_dense_layers") {
  const std::string moe = kSmall + "--num-experts 4 ";
  CHECK(load(import_text(moe + "--moe-layer-freq 2")).model.moe->layer_freq == 2);
  CHECK(load(import_text(moe + "--moe-layer-freq [1,0,1,0]")).model.moe->layer_freq == 2);
  CHECK(load(import_text(moe + "--moe-layer-freq '([0]*1+[1]*3)'")).model.moe->first_dense_layers ==
        1);
  CHECK_THROWS_WITH(import_text(moe + "--moe-layer-freq [0,1,0,1]"),
                    Contains("--moe-layer-freq = [0,1,0,1]") && Contains("neither"));
  CHECK_THROWS_WITH(import_text(moe + "--moe-layer-freq '[1]*3'"),
                    Contains("lists 3 layers, but --num-layers is 4"));
  CHECK_THROWS_WITH(import_text(moe + "--moe-layer-freq 'range(4)'"),
                    Contains("list expression of 0s and 1s"));
}

TEST_CASE("every option not applied is named in a warning by kind") {
  const MegatronImport imported = import_text(
      kSmall +
      "--lr 3e-4 --distribute-saved-activations --frobnicate 3 --num-query-groups 2 --num-layers 4 "
      "--recompute-granularity full --recompute-method block --recompute-num-layers 1 "
      "--cross-entropy-fusion-impl te --recompute-modules mlp");
  CHECK(warned(imported,
               "not modelled (they change step time or memory, wallsim ignores them): "
               "--distribute-saved-activations"));
  CHECK(warned(imported, "unknown to wallsim, ignored: --frobnicate"));
  CHECK(warned(imported, "ignored (no effect on step time or memory): --lr"));
  CHECK(warned(imported,
               "given more than once, the last value applies (as argparse does): "
               "--num-layers"));
  CHECK(warned(imported, "--num-query-groups 2 is ignored without --group-query-attention"));
  CHECK(warned(imported, "--recompute-method block --recompute-num-layers 1: wallsim's full"));
  CHECK(warned(imported, "--cross-entropy-fusion-impl is ignored"));
  // wallsim posts every pipeline receive ahead, as Megatron-LM's default overlap_p2p_comm does
  // with interleaving; the blocking exchange this option asks for is not simulated.
  CHECK(warned(import_text(kSmall + "--no-overlap-p2p-communication"),
               "not modelled (they change step time or memory, wallsim ignores them): "
               "--no-overlap-p2p-communication"));
  CHECK(warned(imported, "--recompute-modules is ignored without selective recompute"));
  CHECK(warned(imported, "linear-layer biases"));
  CHECK(warned(import_text(kSmall + "--hierarchical-context-parallel-sizes 2 2"),
               "--hierarchical-context-parallel-sizes is ignored without --cp-comm-type a2a+p2p"));
  const MegatronImport fp16 = import_text(
      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --vocab-size 1000 "
      "--seq-length 128 --micro-batch-size 2 --fp16 --disable-bias-linear --moe-router-topk 2");
  CHECK(warned(fp16, "--fp16 is simulated as bf16"));
  CHECK(warned(fp16, "ignored without --num-experts (a dense model): --moe-router-topk"));
  CHECK_FALSE(warned(fp16, "linear-layer biases"));
}

TEST_CASE("contradictions Megatron refuses are errors naming the option") {
  CHECK_THROWS_WITH(import_text(kSmall + "--global-batch-size 10"),
                    Contains("training.global_batch (--global-batch-size) = 10") &&
                        Contains("multiple of micro_batch·dp = 2·4 = 8"));
  CHECK_THROWS_WITH(import_text(kSmall + "--num-layers 3 --pipeline-model-parallel-size 2"),
                    Contains("--num-layers = 3: must be a multiple of pp·vpp = 2·1"));
  CHECK_THROWS_WITH(import_text(kSmall + "--pipeline-model-parallel-size 2 "
                                         "--num-layers-per-virtual-pipeline-stage 3"),
                    Contains("--num-layers (4) must be a multiple of pp·N = 2·3"));
  CHECK_THROWS_WITH(import_text(kSmall + "--overlap-grad-reduce --overlap-param-gather"),
                    Contains("--overlap-param-gather: needs --use-distributed-optimizer"));
  CHECK_THROWS_WITH(import_text(kSmall + "--tensor-model-parallel-size 2 --tp-comm-overlap"),
                    Contains("--tp-comm-overlap: needs --sequence-parallel"));
  CHECK_THROWS_WITH(import_text(kSmall + "--swiglu --squared-relu"),
                    Contains("--squared-relu: contradicts --swiglu"));
  CHECK_THROWS_WITH(import_text(kSmall + "--fp16"), Contains("--fp16: contradicts --bf16"));
  CHECK_THROWS_WITH(import_text(kSmall + "--recompute-granularity full"),
                    Contains("needs --recompute-method and --recompute-num-layers"));
  CHECK_THROWS_WITH(import_text(kSmall + "--tensor-model-parallel-size 3", 6),
                    Contains("parallel.tp (--tensor-model-parallel-size) = 3: must divide the "
                             "attention heads (4)"));
  CHECK_THROWS_WITH(import_text(kSmall + "--tensor-model-parallel-size 8"),
                    Contains("num_gpus (the GPU count) = 4: must be a multiple of tp·cp·pp"));
}

TEST_CASE("missing and malformed values are errors naming the option and what is allowed") {
  CHECK_THROWS_WITH(import_text("--hidden-size 8 --bf16"),
                    Contains("args.txt: --num-layers: missing"));
  CHECK_THROWS_WITH(import_text("--num-layers 2 --hidden-size 8 --num-attention-heads 2 --bf16 "
                                "--micro-batch-size 1 --vocab-size 10"),
                    Contains("--seq-length: missing"));
  CHECK_THROWS_WITH(
      import_text("--num-layers 2 --hidden-size 8 --num-attention-heads 2 --seq-length 8 "
                  "--micro-batch-size 1 --tokenizer-type HuggingFaceTokenizer --bf16"),
      Contains("--vocab-size: missing") && Contains("(--tokenizer-type HuggingFaceTokenizer)"));
  CHECK_THROWS_WITH(import_text("--num-layers 2 --hidden-size 8 --num-attention-heads 2 "
                                "--seq-length 8 --micro-batch-size 1 --vocab-size 10"),
                    Contains("Megatron trains in fp32"));
  CHECK_THROWS_WITH(import_text(kSmall + "--num-layers abc"),
                    Contains("--num-layers = abc: must be an integer from 1 to 16777216"));
  CHECK_THROWS_WITH(import_text(kSmall + "--tensor-model-parallel-size 2000000"),
                    Contains("must be an integer from 1 to 1048576"));
  CHECK_THROWS_WITH(import_text(kSmall + "--num-experts 4 --moe-layer-freq [1]*99999999999"),
                    Contains("lists more layers, but --num-layers is 4"));
  CHECK_THROWS_WITH(import_text(kSmall + "--swiglu yes"),
                    Contains("--swiglu = yes: is a switch and takes no value"));
  CHECK_THROWS_WITH(import_text(kSmall + "--normalization Foo"),
                    Contains("--normalization = Foo: must be one of LayerNorm, RMSNorm"));
  CHECK_THROWS_WITH(import_text(kSmall + "--cp-comm-type p2p a2a"),
                    Contains("per-layer exchange types are not modelled"));
  CHECK_THROWS_WITH(import_text("32 " + kSmall), Contains("not an option"));
}

TEST_CASE("shell variables a modelled option needs must be set in the file") {
  CHECK_THROWS_WITH(
      import_text("LAYERS=$1\npython pretrain_gpt.py " + kSmall + "--num-layers $LAYERS"),
      Contains("args.txt:2: --num-layers = $1: needs $1, which the file does not "
               "set"));
  CHECK_THROWS_WITH(import_text(kSmall + "--$OPT 1"), Contains("the option name needs $OPT"));
}

TEST_CASE("the GPU count comes from the option, else from torchrun, else it is an error") {
  MegatronImportOptions none;
  const auto count = [&](const std::string& launcher) {
    return load(import_megatron_args(launcher + " pretrain_gpt.py " + kSmall, "run.sh", none))
        .num_gpus;
  };
  CHECK(count("torchrun --nproc_per_node 4 --nnodes 2") == 8);
  CHECK(count("torchrun --nproc-per-node=2") == 2);
  CHECK_THROWS_WITH(count("python"), Contains("give wallsim import --num-gpus N"));
  CHECK_THROWS_WITH(count("torchrun --nproc_per_node $GPUS"),
                    Contains("--nproc_per_node = $GPUS") && Contains("needs $GPUS"));
  CHECK_THROWS_WITH(count("torchrun --nproc_per_node 8 --nnodes 1:4"),
                    Contains("elastic ranges are not read"));
  MegatronImportOptions sixteen;
  sixteen.num_gpus = 16;
  CHECK(load(import_megatron_args("torchrun --nproc_per_node 4 pretrain_gpt.py " + kSmall, "run.sh",
                                  sixteen))
            .num_gpus == 16);
}

TEST_CASE("the cluster is a shipped name or an existing file") {
  MegatronImportOptions options;
  options.num_gpus = 4;
  options.cluster = "dgx-h200";
  CHECK(import_megatron_args(kSmall, "a", options).config["cluster"] ==
        "configs/clusters/dgx-h200.json");
  options.cluster = "dgx-x999";
  CHECK_THROWS_WITH(import_megatron_args(kSmall, "a", options),
                    Contains("--cluster = dgx-x999: no such cluster file"));
}

TEST_CASE("Megatron-FSDP's sharding strategy and CPU offloading map to their run config keys") {
  // --data-parallel-sharding-strategy defaults to optim_grads_params under --use-megatron-fsdp
  // (Megatron-LM arguments.py); without FSDP the strategy is not read.
  const RunConfig fsdp =
      load(import_text(kSmall + "--use-megatron-fsdp --use-distributed-optimizer"));
  CHECK(fsdp.layout.data_sharding == DataSharding::kParams);
  const RunConfig zero2 = load(import_text(kSmall + "--use-megatron-fsdp "
                                                    "--data-parallel-sharding-strategy optim_grads "
                                                    "--use-distributed-optimizer"));
  CHECK(zero2.layout.data_sharding == DataSharding::kGrads);
  const MegatronImport plain =
      import_text(kSmall + "--data-parallel-sharding-strategy optim_grads");
  CHECK(load(plain).layout.data_sharding == DataSharding::kNone);
  CHECK(warned(plain, "has no effect without --use-megatron-fsdp"));
  CHECK_THROWS_WITH(
      import_text(kSmall + "--use-megatron-fsdp"),
      Contains("--use-megatron-fsdp") && Contains("needs --use-distributed-optimizer"));
  // 4 layers at pp 1: three offloaded, the last kept.
  const MegatronImport offload =
      import_text(kSmall + "--cpu-offloading --cpu-offloading-num-layers 3");
  CHECK(load(offload).training.offload_activations);
  CHECK_FALSE(warned(offload, "--cpu-offloading"));
  // Fewer layers: only the first of the block (TE's offload handler counts layers from the
  // first).
  const MegatronImport one = import_text(kSmall + "--cpu-offloading --cpu-offloading-num-layers 1");
  CHECK(load(one).training.offload_layers == 1);
  CHECK_FALSE(warned(one, "--cpu-offloading"));
  CHECK(warned(import_text(kSmall + "--cpu-offloading --cpu-offloading-num-layers 4"),
               "not the 4 of --cpu-offloading-num-layers"));
  // Megatron-Core's fine-grained offloading: the modules' saved tensors.
  const RunConfig modules = load(import_text(
      kSmall + "--fine-grained-activation-offloading --offload-modules core_attn attn_proj"));
  CHECK(modules.training.offload_activations);
  CHECK(modules.training.offload_modules == std::vector<std::string>{"core_attn", "attn_proj"});
  CHECK_THROWS_WITH(
      import_text(kSmall + "--fine-grained-activation-offloading --offload-modules softmax"),
      Contains("--offload-modules") && Contains("must be among"));
  CHECK(warned(import_text(kSmall + "--offload-modules core_attn"),
               "has no effect without --fine-grained-activation-offloading"));
  // The hybrid CPU optimizer: Megatron's --optimizer-offload-fraction defaults to 1.0.
  const std::string cpu_optimizer =
      kSmall +
      "--use-distributed-optimizer --use-precision-aware-optimizer --optimizer-cpu-offload ";
  const RunConfig all = load(import_text(cpu_optimizer));
  CHECK(all.training.offload_optimizer_fraction == 1.0);
  CHECK_FALSE(all.training.offload_optimizer_overlap);
  const RunConfig part = load(import_text(
      cpu_optimizer + "--optimizer-offload-fraction 0.3 --overlap-cpu-optimizer-d2h-h2d"));
  CHECK(part.training.offload_optimizer_fraction == 0.3);
  CHECK(part.training.offload_optimizer_overlap);
  CHECK(warned(import_text(kSmall + "--overlap-cpu-optimizer-d2h-h2d"),
               "have no effect without --optimizer-cpu-offload"));
  // The chunked state offload, under its legacy spelling too (fraction 1.0 by default).
  const RunConfig states =
      load(import_text(kSmall + "--use-distributed-optimizer --offload-optimizer-states "
                                "--optimizer-state-offload-chunk-size-mb 256"));
  CHECK(states.training.offload_optimizer_states == 1.0);
  CHECK(states.training.offload_optimizer_state_chunk_mb == 256);
}

TEST_CASE("distributed-optimizer instances import as hybrid sharding") {
  // 4 GPUs, dp 4: two instances shard over groups of 2.
  const RunConfig two = load(
      import_text(kSmall + "--use-distributed-optimizer --num-distributed-optimizer-instances 2"));
  CHECK(two.layout.dp_shards() == 2);
  CHECK(two.layout.dp_replicas() == 2);
  CHECK_THROWS_WITH(import_text(kSmall + "--num-distributed-optimizer-instances 2"),
                    Contains("needs --use-distributed-optimizer"));
  CHECK_THROWS_WITH(
      import_text(kSmall + "--use-distributed-optimizer --num-distributed-optimizer-instances 3"),
      Contains("must divide dp·cp = 4"));
}

TEST_CASE("a launch line that is not UTF-8 is rejected, not carried into the config") {
  CHECK_THROWS_WITH(
      import_text(kSmall + "--tokenizer-model caf\xE9.model"),
      Catch::Matchers::Contains("args.txt:1") && Catch::Matchers::Contains("not UTF-8"));
}

TEST_CASE("the precision-aware optimizer's options import as training.optimizer") {
  // --main-grads-dtype bf16 leaves accumulate_allreduce_grads_in_fp32 off in Megatron: the
  // gradient buffer is bf16, as with --grad-reduce-in-bf16.
  const RunConfig config = load(
      import_text(kSmall + "--use-distributed-optimizer --use-precision-aware-optimizer "
                           "--main-grads-dtype bf16 --main-params-dtype fp16 --exp-avg-dtype bf16 "
                           "--exp-avg-sq-dtype fp8"));
  CHECK(config.training.grad_reduce_dtype == Dtype::kBf16);
  CHECK(config.training.optimizer.precision_aware);
  CHECK(config.training.optimizer.main_params == StateDtype::kFp16);
  CHECK(config.training.optimizer.exp_avg == StateDtype::kBf16);
  CHECK(config.training.optimizer.exp_avg_sq == StateDtype::kFp8);
  // Megatron asserts fp32 optimizer tensors without --use-precision-aware-optimizer.
  CHECK_THROWS_WITH(import_text(kSmall + "--use-distributed-optimizer --exp-avg-dtype bf16"),
                    Contains("--exp-avg-dtype") && Contains("bf16") &&
                        Contains("--use-precision-aware-optimizer"));
  CHECK_THROWS_WITH(import_text(kSmall + "--use-precision-aware-optimizer --exp-avg-sq-dtype int8"),
                    Contains("--exp-avg-sq-dtype") && Contains("fp32, fp16, bf16, fp8"));
}
