#include "models/launch_args/megatron_export.hpp"

#include <algorithm>
#include <filesystem>

#include <catch2/catch.hpp>

#include "models/flops.hpp"
#include "models/launch_args/megatron_import.hpp"
#include "models/memory.hpp"
#include "models/parameter_count.hpp"
#include "models/run_config.hpp"
#include "tests/unit/import/import_test_support.hpp"

using Catch::Matchers::Contains;
using namespace wallsim;
using namespace wallsim::models;

using namespace wallsim::test;

namespace {

std::vector<std::string> shipped_examples() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(source_path("configs/examples"))) {
    if (entry.path().extension() == ".json") paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

RunConfig reimport(const RunConfig& config, const std::string& args) {
  MegatronImportOptions options;
  options.num_gpus = config.num_gpus;
  options.cluster = "dgx-h100";
  const MegatronImport imported = import_megatron_args(args, "exported.args", options);
  return run_config_from_json(imported.config, "exported.args");
}

bool has_option(const MegatronExport& exported, const std::string& flag,
                const std::vector<std::string>& values) {
  for (const auto& option : exported.options) {
    if (option.flag == flag && option.values == values) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("export then import is the identity on every shipped example") {
  const auto examples = shipped_examples();
  REQUIRE(examples.size() >= 8);
  for (const std::string& path : examples) {
    INFO(path);
    const RunConfig config = load_run_config(path);
    const MegatronExport exported = export_megatron_args(config);
    const std::string args = format_megatron_args(exported.options, true);
    const RunConfig back = reimport(config, args);
    // The same arguments again: every option export writes is read back to the same value.
    CHECK(format_megatron_args(export_megatron_args(back).options, true) == args);
    // And the same job: parameters, FLOPs, layout and memory per stage.
    const std::int64_t tp = config.parallel.tp;
    CHECK(total_parameters(back.model, tp) == total_parameters(config.model, tp));
    CHECK(
        iteration_flops(back.model, back.training, tp, back.num_gpus).hardware_per_iteration ==
        iteration_flops(config.model, config.training, tp, config.num_gpus).hardware_per_iteration);
    CHECK(back.layout.sizes.dp == config.layout.sizes.dp);
    CHECK(back.layout.vpp == config.layout.vpp);
    CHECK(back.layout.num_microbatches == config.layout.num_microbatches);
    // A schedule Megatron-LM does not have (zbv) is named in the notes and comes back as
    // Megatron's choice by vpp, whose activation memory differs.
    const std::string schedule = config.layout.schedule->name;
    if (schedule != "1f1b" && schedule != "interleaved") {
      CHECK(std::find(exported.notes.begin(), exported.notes.end(),
                      "training.schedule " + schedule + " is not a Megatron-LM schedule") !=
            exported.notes.end());
      continue;
    }
    CHECK(back.layout.schedule == config.layout.schedule);
    const MemoryReport before = memory_report(config.model, config.layout, config.training, 80e9);
    const MemoryReport after = memory_report(back.model, back.layout, back.training, 80e9);
    CHECK(after.peak_bytes == before.peak_bytes);
  }
}

TEST_CASE("export then import is the identity on variants that use every exported option") {
  // Each variant sets options the shipped examples leave at their defaults.
  const std::vector<std::pair<std::string, std::vector<std::string>>> variants = {
      {"llama2-7b-32k-cp-16gpu",
       {"parallel.cp_comm_type=a2a+p2p", "parallel.hierarchical_cp=[2,2]",
        "training.recompute=full", "training.precision=fp8", "training.grad_reduce_dtype=bf16",
        "training.cross_entropy_fusion=te", "training.attention_backend=flash2"}},
      {"llama3-8b-8gpu",
       {"parallel.cp=2", "parallel.cp_comm_type=all_gather", "training.cuda_graphs=per_layer",
        "training.recompute_modules=[\"core_attn\",\"mlp\"]", "model.kv_heads=null",
        "model.hidden_dropout=0.1", "model.activation=squared_relu", "model.tied_embeddings=true",
        "training.attention_backend=unfused", "parallel.cp=1", "parallel.order=tp-cp-ep-pp-dp"}},
      {"llama3-70b-1024gpu",
       {"parallel.vpp=null", "parallel.pipeline_layout=Et*19|t*20|t*20|t*21L",
        "training.schedule=null", "training.cross_entropy_fusion=native"}},
      {"llama3-70b-1024gpu",
       {"parallel.vpp=1", "parallel.first_stage_layers=18", "parallel.last_stage_layers=22",
        "training.schedule=null", "model.norm=layernorm", "model.head_dim=96"}},
      {"mixtral-8x7b-64gpu",
       {"model.moe.capacity_factor=1.25", "model.moe.router_fusion=true", "model.moe.layer_freq=2",
        "model.moe.router_groups=4", "model.moe.router_group_topk=2",
        "parallel.moe_dispatcher=allgather", "parallel.moe_grouped_gemm=false", "parallel.etp=2",
        "parallel.tp=2", "parallel.sequence_parallel=true", "training.cuda_graphs=full_iteration"}},
      {"qwen3-30b-a3b-8gpu",
       {"model.moe.first_dense_layers=4", "model.moe.score_function=sigmoid",
        "model.moe.shared_ffn_hidden=1536", "model.mtp_layers=1",
        "training.overlap.shared_expert=true"}},
      {"llama3-8b-8gpu",
       {"training.optimizer.precision_aware=true", "training.optimizer.main_params_dtype=fp16",
        "training.optimizer.exp_avg_dtype=bf16", "training.optimizer.exp_avg_sq_dtype=fp8",
        "training.grad_reduce_dtype=bf16"}},
      {"llama3-8b-8gpu",
       {"training.optimizer.precision_aware=true", "training.offload.optimizer_fraction=0.25",
        "training.offload.optimizer_overlap=true", "parallel.fsdp_shard_group=2"}},
      {"llama3-8b-8gpu",
       {"training.optimizer.precision_aware=true", "training.offload.optimizer_states=0.75",
        "training.offload.optimizer_state_chunk_mb=256"}},
      // Without the distributed optimizer the overlapped parameter gather has nothing to do,
      // and Megatron refuses --overlap-param-gather: it is not written.
      {"llama3-8b-16gpu-fsdp", {"parallel.data_sharding=none"}},
  };
  for (const auto& [example, overrides] : variants) {
    INFO(example);
    const RunConfig config =
        load_run_config(source_path("configs/examples/" + example + ".json"), overrides);
    const std::string args = format_megatron_args(export_megatron_args(config).options, true);
    INFO(args);
    const RunConfig back = reimport(config, args);
    CHECK(format_megatron_args(export_megatron_args(back).options, true) == args);
    const std::int64_t tp = config.parallel.tp;
    CHECK(total_parameters(back.model, tp) == total_parameters(config.model, tp));
    CHECK(
        iteration_flops(back.model, back.training, tp, back.num_gpus).hardware_per_iteration ==
        iteration_flops(config.model, config.training, tp, config.num_gpus).hardware_per_iteration);
    const MemoryReport before = memory_report(config.model, config.layout, config.training, 80e9);
    const MemoryReport after = memory_report(back.model, back.layout, back.training, 80e9);
    CHECK(after.peak_bytes == before.peak_bytes);
    CHECK(back.layout.schedule == config.layout.schedule);
    CHECK(back.layout.cp.type == config.layout.cp.type);
    CHECK(back.layout.expert.grouped_gemm == config.layout.expert.grouped_gemm);
    CHECK(back.training.cuda_graphs == config.training.cuda_graphs);
    CHECK(back.training.overlap.shared_expert == config.training.overlap.shared_expert);
    CHECK(back.parallel.order == config.parallel.order);
    CHECK(back.training.optimizer.precision_aware == config.training.optimizer.precision_aware);
    CHECK(back.training.optimizer.main_params == config.training.optimizer.main_params);
    CHECK(back.training.optimizer.exp_avg == config.training.optimizer.exp_avg);
    CHECK(back.training.optimizer.exp_avg_sq == config.training.optimizer.exp_avg_sq);
    CHECK(back.training.offload_optimizer_fraction == config.training.offload_optimizer_fraction);
    CHECK(back.training.offload_optimizer_overlap == config.training.offload_optimizer_overlap);
    CHECK(back.layout.dp_shards() == config.layout.dp_shards());
    CHECK(back.training.offload_optimizer_states == config.training.offload_optimizer_states);
    CHECK(back.training.offload_optimizer_state_chunk_mb ==
          config.training.offload_optimizer_state_chunk_mb);
  }
}

TEST_CASE("virtual stages are exported as layers per virtual stage when they divide evenly") {
  // configs/examples/llama3-70b-1024gpu.json: 80 layers, pp 4, vpp 5 → 4 layers per virtual
  // stage.
  const MegatronExport exported = export_megatron_args(
      load_run_config(source_path("configs/examples/llama3-70b-1024gpu.json")));
  CHECK(has_option(exported, "--num-layers-per-virtual-pipeline-stage", {"4"}));
  CHECK(has_option(exported, "--num-query-groups", {"8"}));
  CHECK(has_option(exported, "--tp-comm-overlap", {}));
  const MegatronExport uneven = export_megatron_args(load_run_config(
      source_path("configs/examples/llama3-70b-1024gpu.json"),
      {"parallel.first_stage_layers=8", "parallel.last_stage_layers=8", "parallel.vpp=2"}));
  CHECK(has_option(uneven, "--num-virtual-stages-per-pipeline-rank", {"2"}));
  CHECK(has_option(uneven, "--decoder-first-pipeline-num-layers", {"8"}));
}

TEST_CASE("what Megatron-LM cannot express is named in the notes") {
  const RunConfig config =
      load_run_config(source_path("configs/examples/llama3-8b-8gpu.json"),
                      {"parallel.order=tp-dp-cp-ep-pp", "training.attention_backend=flash3",
                       "training.overlap.cp_comm=false"});
  const MegatronExport exported = export_megatron_args(config);
  REQUIRE(exported.notes.size() == 3);
  CHECK_THAT(exported.notes[0], Contains("parallel.order"));
  CHECK_THAT(exported.notes[1], Contains("overlap.cp_comm false"));
  CHECK_THAT(exported.notes[2], Contains("flash3"));
  CHECK(has_option(exported, "--attention-backend", {"flash"}));
}

TEST_CASE("the torchrun prefix carries the GPU count back through import") {
  // configs/examples/llama3-70b-1024gpu.json: 1024 GPUs on 8-GPU DGX H100 nodes = 128 nodes.
  const RunConfig config = load_run_config(source_path("configs/examples/llama3-70b-1024gpu.json"));
  const auto words = torchrun_words(config);
  CHECK(words == std::vector<std::string>{"torchrun", "--nproc_per_node", "8", "--nnodes", "128",
                                          "pretrain_gpt.py"});
  const std::string launch =
      format_megatron_args(export_megatron_args(config).options, true, words);
  CHECK(launch.rfind("torchrun --nproc_per_node 8 --nnodes 128 pretrain_gpt.py \\\n--num-layers 80",
                     0) == 0);
  MegatronImportOptions no_count;
  const RunConfig back =
      run_config_from_json(import_megatron_args(launch, "launch.sh", no_count).config, "launch.sh");
  CHECK(back.num_gpus == 1024);
  // Fewer GPUs than a node: one process per GPU on one node.
  const RunConfig small = load_run_config(source_path("configs/examples/llama3-8b-8gpu.json"),
                                          {"num_gpus=4", "parallel.tp=1"});
  CHECK(torchrun_words(small)[2] == "4");
  CHECK(torchrun_words(small)[4] == "1");
}

TEST_CASE("export writes shell words, quoting what the shell would split or expand") {
  const std::vector<MegatronOption> options = {
      {"--moe-layer-freq", {"([0]*3+[1]*58)"}}, {"--bf16", {}}, {"--x", {"it's"}}};
  CHECK(format_megatron_args(options, false) ==
        "--moe-layer-freq '([0]*3+[1]*58)' --bf16 --x 'it'\\''s'");
  CHECK(format_megatron_args(options, true) ==
        "--moe-layer-freq '([0]*3+[1]*58)' \\\n--bf16 \\\n--x 'it'\\''s'\n");
}
