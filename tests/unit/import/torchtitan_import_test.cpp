#include "models/launch_args/torchtitan_import.hpp"

#include <catch2/catch.hpp>

#include "models/flops.hpp"
#include "models/launch_args/torchtitan_layout.hpp"
#include "models/memory.hpp"
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

MegatronImportOptions options(std::optional<std::int64_t> gpus,
                              const std::string& cluster = "dgx-h100") {
  MegatronImportOptions out;
  out.num_gpus = gpus;
  out.cluster = cluster;
  return out;
}

MegatronImport import_fixture(const std::string& name, std::int64_t gpus,
                              const std::string& cluster) {
  return import_torchtitan_file(source_path("tests/data/torchtitan/" + name + ".toml"),
                                options(gpus, cluster));
}

MegatronImport import_text(const std::string& text, std::optional<std::int64_t> gpus = 8,
                           const std::string& cluster = "dgx-h100") {
  return import_torchtitan_toml(text, "job.toml", options(gpus, cluster));
}

// Llama 3 8B with TorchTitan's defaults but for `extra` (TOML lines, sections included).
std::string job(const std::string& extra) {
  return "[model]\nname = \"llama3\"\nflavor = \"8B\"\n" + extra;
}

}  // namespace

TEST_CASE("TorchTitan's Llama 3 8B config on 16 GPUs is the shipped FSDP example's job") {
  const MegatronImport imported = import_fixture("llama3_8b", 16, "dgx-h100");
  const RunConfig config = load(imported);
  // configs/examples/llama3-8b-16gpu-fsdp.json is this layout: tp = cp = pp = 1, FSDP over 16
  // GPUs, seq 8192, micro-batch 1, selective recompute of core_attn, DP overlap. Its global
  // batch is 64; TorchTitan's is batch_size 1 × 16 data-parallel ranks = 16.
  const RunConfig example = load_run_config(
      source_path("configs/examples/llama3-8b-16gpu-fsdp.json"), {"training.global_batch=16"});
  CHECK(total_parameters(config.model, 1) == total_parameters(example.model, 1));
  CHECK(iteration_flops(config.model, config.training, 1, 16).hardware_per_iteration ==
        iteration_flops(example.model, example.training, 1, 16).hardware_per_iteration);
  CHECK(memory_report(config.model, config.layout, config.training, 80e9).peak_bytes ==
        memory_report(example.model, example.layout, example.training, 80e9).peak_bytes);
  CHECK(config.layout.data_sharding == DataSharding::kParams);
  CHECK(config.layout.sizes.dp == 16);
  CHECK(config.training.global_batch == 16);
  CHECK(config.training.micro_batch == 1);
  CHECK(config.training.recompute == Recompute::selective);
  CHECK(config.training.overlap.dp_param_gather);
  CHECK(warned(imported, "selective_ac_option op"));
  CHECK(warned(imported,
               "[training] fields wallsim does not model (not read): dataset, "
               "max_norm, steps"));
  CHECK(warned(imported, "[float8] fields wallsim does not model (not read): filter_fqns"));
  CHECK(warned(imported,
               "sections not read (no effect on step time or memory): checkpoint, "
               "job, lr_scheduler, metrics, optimizer, profiling"));
}

TEST_CASE("TorchTitan's Llama 3 70B config on 64 A100 is TP 8 with FSDP over 8") {
  const MegatronImport imported = import_fixture("llama3_70b", 64, "dgx-a100");
  const RunConfig config = load(imported);
  const ModelSpec shipped = shipped_model("llama3-70b");
  CHECK(total_parameters(config.model, 8) == total_parameters(shipped, 8));
  // 64 GPUs / tensor_parallel_degree 8 = data_parallel_shard_degree 8; local_batch_size 8.
  CHECK(config.layout.sizes.tp == 8);
  CHECK(config.layout.sequence_parallel);
  CHECK(config.layout.sizes.dp == 8);
  CHECK(config.layout.data_sharding == DataSharding::kParams);
  CHECK(config.training.micro_batch == 8);
  CHECK(config.training.global_batch == 64);  // 8 × 8
  CHECK(config.training.recompute == Recompute::full);
  CHECK_FALSE(config.training.overlap.tp_comm);
  CHECK(warned(imported, "[compile] fields wallsim does not model (not read): components"));
  CHECK(warned(imported, "validation"));
}

TEST_CASE("TorchTitan's Llama 3.1 405B config is FP8 with async TP under compile") {
  const MegatronImport imported = import_fixture("llama3_405b", 128, "dgx-h100");
  const RunConfig config = load(imported);
  CHECK(total_parameters(config.model, 8) == total_parameters(shipped_model("llama3-405b"), 8));
  CHECK(config.training.precision == Dtype::kFp8);
  CHECK(config.training.quantization == Quantization::kFp8PerTensor);
  CHECK(config.training.overlap.tp_comm);
  CHECK(config.layout.sizes.dp == 16);  // 128 / 8
  CHECK(config.training.micro_batch == 2);
  CHECK(config.training.global_batch == 32);  // 2 × 16
  CHECK(warned(imported, "torch.compile ([compile] enable, training.compile in older configs)"));
  CHECK(warned(imported, "enable_fsdp_float8_all_gather"));
  CHECK(warned(imported, "precompute_float8_dynamic_scale_for_fsdp"));
}

TEST_CASE("the degrees give the GPU count, and contradictions name the fields") {
  const std::string fixed =
      job("[parallelism]\ndata_parallel_shard_degree = 4\ntensor_parallel_degree = 2\n");
  CHECK(load(import_text(fixed, std::nullopt)).num_gpus == 8);
  CHECK_THROWS_WITH(import_text(fixed, 16),
                    Contains("job.toml:") && Contains("parallelism.data_parallel_shard_degree") &&
                        Contains("replicate·shard·cp·tp·pp = 1·4·1·2·1 = 8 must equal the GPU "
                                 "count 16"));
  CHECK_THROWS_WITH(import_text(job(""), std::nullopt),
                    Contains("give wallsim import --num-gpus N"));
  CHECK_THROWS_WITH(import_text(job(""), -8),
                    Contains("command line: --num-gpus = -8: must be from 1 to 1048576"));
  CHECK_THROWS_WITH(import_text(job("[parallelism]\ntensor_parallel_degree = 3\n"), 8),
                    Contains("8 / (replicate·cp·tp·pp = 3), is not an integer"));
  CHECK_THROWS_WITH(import_text(job("[parallelism]\ntensor_parallel_degree = \"8\"\n")),
                    Contains("job.toml:5:26") && Contains("must be an integer"));
  CHECK_THROWS_WITH(import_text(job("[parallelism]\ncontext_parallel_degree = 0\n")),
                    Contains("parallelism.context_parallel_degree = 0: must be an integer from 1"));
}

TEST_CASE("the batch is local_batch_size per data-parallel rank, or the global batch") {
  // 8 GPUs, FSDP over 8: local 2 × 8 = 16 unless the global batch is given.
  const RunConfig plain = load(import_text(job("[training]\nlocal_batch_size = 2\n")));
  CHECK(plain.training.global_batch == 16);
  CHECK(plain.training.micro_batch == 2);
  const RunConfig accumulated = load(import_text(
      job("[training]\nlocal_batch_size = 2\nglobal_batch_size = 64\nseq_len = 4096\n")));
  CHECK(accumulated.training.global_batch == 64);
  CHECK(accumulated.layout.num_microbatches == 4);  // 64 / (2 × 8)
  CHECK(accumulated.training.seq_len == 4096);
  CHECK_THROWS_WITH(
      import_text(job("[training]\nlocal_batch_size = 2\nglobal_batch_size = 24\n")),
      Contains("training.global_batch_size = 24: must be -1 or a multiple of local_batch_size × "
               "data-parallel degree = 2 × 8 = 16"));
}

TEST_CASE("FSDP2, DDP and HSDP map to data sharding, HSDP with its shard group") {
  const RunConfig ddp = load(import_text(
      job("[parallelism]\ndata_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1\n")));
  CHECK(ddp.layout.data_sharding == DataSharding::kNone);
  CHECK(ddp.training.overlap.dp_grad_reduce);
  CHECK_FALSE(ddp.training.overlap.dp_param_gather);
  const MegatronImport hsdp = import_text(
      job("[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n"));
  CHECK(load(hsdp).layout.data_sharding == DataSharding::kParams);
  CHECK(load(hsdp).layout.sizes.dp == 8);
  // Sharded over the 4 ranks of dp_shard, replicated twice.
  CHECK(load(hsdp).layout.dp_shards() == 4);
  CHECK(load(hsdp).layout.dp_replicas() == 2);
  CHECK_FALSE(warned(hsdp, "HSDP"));
  const MegatronImport never =
      import_text(job("[parallelism]\nfsdp_reshard_after_forward = \"never\"\n"));
  CHECK(load(never).layout.data_sharding == DataSharding::kGrads);
  CHECK(warned(never, "simulated as parallel.data_sharding grads"));
  CHECK_THROWS_WITH(import_text(job("[parallelism]\nfsdp_reshard_after_forward = \"sometimes\"\n")),
                    Contains("must be one of default, always, never"));
}

TEST_CASE("pipeline stages split the layers as TorchTitan does") {
  // 32 layers + embedding and output weights of 1 = 34 over 4 stages: 9, 9, 8, 8, less the
  // weights on the first and last stage.
  const RunConfig single = load(import_text(
      job("[parallelism]\npipeline_parallel_degree = 4\n[training]\nlocal_batch_size = 4\n")));
  CHECK(single.layout.sizes.pp == 4);
  CHECK(layers_per_virtual_stage(single.layout) == std::vector<std::int64_t>{8, 9, 8, 7});
  CHECK(single.layout.schedule->name == "1f1b");
  // Interleaved1F1B puts 2 stages on each rank: 34 over 8 is 5, 5, 4, … less the weights.
  const RunConfig looped = load(
      import_text(job("[parallelism]\npipeline_parallel_degree = 4\npipeline_parallel_schedule = "
                      "\"Interleaved1F1B\"\n[training]\nlocal_batch_size = 8\n")));
  CHECK(looped.layout.vpp == 2);
  CHECK(layers_per_virtual_stage(looped.layout) ==
        std::vector<std::int64_t>{4, 5, 4, 4, 4, 4, 4, 3});
  CHECK(looped.layout.schedule->name == "interleaved");
  // Listed model parts are placed as listed.
  std::string parts = "module_fqns_per_model_part = [[\"tok_embeddings\"";
  for (int i = 0; i < 32; ++i)
    parts += std::string(i == 20 ? "], [" : ", ") + "\"layers." + std::to_string(i) + "\"";
  parts += ", \"norm\", \"output\"]]\n";
  const RunConfig listed = load(import_text(job("[parallelism]\npipeline_parallel_degree = 2\n" +
                                                parts + "[training]\nlocal_batch_size = 2\n")));
  CHECK(layers_per_virtual_stage(listed.layout) == std::vector<std::int64_t>{20, 12});
}

TEST_CASE("ZBVZeroBubble and DualPipeV run as zbv and dualpipev, two stages per rank in a V") {
  // Replicated data parallelism and no activation checkpointing: wallsim's W passes are not
  // built for FSDP's sharded gradients or full recompute.
  for (const auto& [titan, wallsim] :
       {std::pair{"ZBVZeroBubble", "zbv"}, std::pair{"DualPipeV", "dualpipev"}}) {
    INFO(titan);
    const RunConfig v = load(import_text(
        job("[parallelism]\npipeline_parallel_degree = 4\ndata_parallel_replicate_degree = 2\n"
            "data_parallel_shard_degree = 1\npipeline_parallel_schedule = \"" +
            std::string(titan) +
            "\"\n[training]\nlocal_batch_size = 8\n[activation_checkpoint]\nmode = \"none\"\n")));
    CHECK(v.layout.vpp == 2);
    CHECK(v.layout.schedule->name == wallsim);
    // TorchTitan's default split of 8 stages (as for Interleaved1F1B above), placed in a V:
    // rank 0 holds the first and the last stage, the embedding and the output layer.
    CHECK(layers_per_virtual_stage(v.layout) == std::vector<std::int64_t>{4, 5, 4, 4, 4, 4, 4, 3});
    CHECK(v.layout.embedding_chunk_on(0) == 0);
    CHECK(v.layout.output_chunk_on(0) == 1);
  }
}

TEST_CASE("pipeline schedules wallsim does not run are refused or approximated by name") {
  const std::string pp = "[parallelism]\npipeline_parallel_degree = 2\n";
  CHECK_THROWS_WITH(import_text(job(pp + "pipeline_parallel_schedule = \"LoopedBFS\"\n")),
                    Contains("pipeline_parallel_schedule = LoopedBFS: not modelled by wallsim; "
                             "must be one of 1F1B, Interleaved1F1B, GPipe"));
  CHECK_THROWS_WITH(import_text(job(pp + "pipeline_parallel_schedule = \"Zigzag\"\n")),
                    Contains("not a torch.distributed.pipelining schedule"));
  CHECK_THROWS_WITH(
      import_text(job(pp + "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                           "pipeline_parallel_layers_per_stage = 17\n")),
      Contains("2 stages over 2 ranks: Interleaved1F1B needs 2 or more stages per rank"));
  CHECK_THROWS_WITH(import_text(job(pp + "pipeline_parallel_first_stage_less_layers = 40\n")),
                    Contains("pipeline_parallel_first_stage_less_layers = 40: must be from 0 to "
                             "the model's 32 layers"));
  CHECK_THROWS_WITH(
      import_text(job(pp + "module_fqns_per_model_part = [[\"norm\", \"layers.0\"], "
                           "[\"tok_embeddings\", \"output\"]]\n")),
      Contains("module_fqns_per_model_part = norm: wallsim runs tok_embeddings on the first "
               "model part"));
  const MegatronImport gpipe = import_text(job(pp + "pipeline_parallel_schedule = \"GPipe\"\n"));
  CHECK(load(gpipe).layout.schedule->name == "1f1b");
  CHECK(warned(gpipe, "memory is underestimated"));
  // Several gradient-accumulation steps run the schedule several times.
  const MegatronImport accumulated = import_text(
      job(pp + "pipeline_parallel_microbatch_size = 2\n[training]\nlocal_batch_size = 4\n"
               "global_batch_size = 32\n"));
  CHECK(load(accumulated).training.micro_batch == 2);
  CHECK(warned(accumulated, "once per gradient-accumulation step (2 per step)"));
}

TEST_CASE("activation checkpointing modes map to recompute") {
  const auto recompute = [](const std::string& section) {
    return load(import_text(job("[activation_checkpoint]\n" + section))).training.recompute;
  };
  CHECK(recompute("mode = \"none\"\n") == Recompute::none);
  CHECK(recompute("mode = \"full\"\n") == Recompute::full);
  CHECK(recompute("selective_ac_option = \"1\"\n") == Recompute::full);
  // TorchTitan's default, selective "2": full checkpointing of every second layer.
  const MegatronImport every_second = import_text(job(""));
  CHECK(load(every_second).training.recompute == Recompute::full);
  CHECK(warned(every_second, "selective_ac_option 2 (full checkpointing of every 2-th layer)"));
  CHECK_THROWS_WITH(import_text(job("[activation_checkpoint]\nmode = \"some\"\n")),
                    Contains("activation_checkpoint.mode = some: must be one of none, selective, "
                             "full, memory_budget"));
}

TEST_CASE("converters, dtypes, CP, EP and async TP map to their run config keys") {
  const RunConfig mx =
      load(import_text(job("converters = [\"quantize.linear.mx\"]\n"), 8, "dgx-b200"));
  CHECK(mx.training.quantization == Quantization::kMxfp8);
  // The converter's older name; `wallsim run` refuses MXFP8 on Hopper, the import does not.
  CHECK(load(import_text(job("converters = [\"mx\"]\n"))).training.quantization ==
        Quantization::kMxfp8);
  const MegatronImport fp32 = import_text(job(
      "[training]\nmixed_precision_param = \"float32\"\nmixed_precision_reduce = \"bfloat16\"\n"));
  CHECK(load(fp32).training.grad_reduce_dtype == Dtype::kBf16);
  CHECK(warned(fp32, "fp32 compute is not modelled"));
  const RunConfig cp = load(import_text(
      job("[parallelism]\ncontext_parallel_degree = 2\ncontext_parallel_rotate_method = "
          "\"alltoall\"\n")));
  CHECK(cp.layout.sizes.cp == 2);
  CHECK(cp.layout.cp.type == CpCommType::kP2p);
  const MegatronImport eager = import_text(
      job("[parallelism]\ntensor_parallel_degree = 2\nenable_async_tensor_parallel = true\n"));
  CHECK_FALSE(load(eager).training.overlap.tp_comm);
  CHECK(warned(eager, "needs [compile] enable"));
  const MegatronImport moe = import_text(
      "[model]\nname = \"qwen3\"\nflavor = \"30B-A3B\"\n[parallelism]\nexpert_parallel_degree = "
      "4\nexpert_parallel_comm_backend = \"deepep\"\n");
  CHECK(load(moe).layout.expert.ep == 4);
  CHECK(load(moe).layout.expert.dispatcher == MoeDispatcher::kFlex);
}

TEST_CASE("DeepSeek-V3 imports without the multi-token-prediction layer TorchTitan lacks") {
  const MegatronImport imported = import_text(
      "[model]\nname = \"deepseek_v3\"\nflavor = \"671B\"\n[parallelism]\n"
      "expert_parallel_degree = 64\npipeline_parallel_degree = 8\n[training]\nlocal_batch_size = "
      "8\n",
      512, "gb200-nvl72");
  const RunConfig config = load(imported);
  CHECK(config.model.mtp_layers == 0);
  CHECK(config.model.layers == shipped_model("deepseek-v3").layers);
  CHECK(warned(imported, "TorchTitan trains no multi-token-prediction layer"));
}

TEST_CASE("unknown flavours, fields and sections and broken TOML are named") {
  CHECK_THROWS_WITH(import_text("[model]\nname = \"llama3\"\n"),
                    Contains("model.flavor = llama3 debugmodel: wallsim ships no model of that "
                             "shape; must be one of llama3 8B, llama3 70B, llama3 405B"));
  CHECK_THROWS_WITH(import_text("[model\nname = 1\n"),
                    Contains("job.toml:1:") && Contains("not TOML"));
  CHECK_THROWS_WITH(import_text(job("[training]\nseq_len = \"\xff\"\n")), Contains("UTF-8"));
  const MegatronImport unknown =
      import_text(job("[parallelism]\ntensor_parallelism = 2\n[frobnicate]\nx = 1\n"));
  CHECK(warned(unknown,
               "[parallelism] fields TorchTitan does not define (ignored): "
               "tensor_parallelism"));
  CHECK(warned(unknown, "sections or fields TorchTitan does not define (ignored): frobnicate"));
}
