#include "models/launch_args/torchtitan_export.hpp"

#include <filesystem>

#include <catch2/catch.hpp>

#include "models/flops.hpp"
#include "models/launch_args/torchtitan_import.hpp"
#include "models/launch_args/torchtitan_layout.hpp"
#include "models/memory.hpp"
#include "models/parameter_count.hpp"
#include "models/run_config.hpp"

using Catch::Matchers::Contains;
using namespace wallsim;
using namespace wallsim::models;

namespace {

std::string example_path(const std::string& name) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/" + name + ".json";
}

// The example's cluster file, which the exported TOML does not carry.
std::string cluster_of(const RunConfig& config) {
  const std::string reference = config.source->at("cluster").get<std::string>();
  return (std::filesystem::path(config.file).parent_path() / reference).string();
}

RunConfig reimport(const RunConfig& config, const std::string& toml) {
  MegatronImportOptions options;
  options.num_gpus = config.num_gpus;
  options.cluster = cluster_of(config);
  const MegatronImport imported = import_torchtitan_toml(toml, "exported.toml", options);
  return run_config_from_json(imported.config, "exported.toml");
}

std::string without_job(const std::string& toml) {
  return toml.substr(toml.find("[model]"));
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

}  // namespace

TEST_CASE("export then import torchtitan is the identity on layouts TorchTitan can express") {
  // Shipped examples with what TorchTitan cannot express (ZeRO-1, Megatron's selective
  // recompute) replaced: FSDP, DDP, ZeRO-2 under PP, interleaving, async TP, CP, EP, FP8.
  const std::vector<std::pair<std::string, std::vector<std::string>>> variants = {
      {"llama3-8b-16gpu-fsdp", {"training.recompute=full"}},
      {"llama3-8b-16gpu-fsdp",
       {"training.recompute=none", "parallel.cp=2", "parallel.cp_comm_type=all_gather"}},
      {"llama3-8b-16gpu-fsdp",
       {"training.recompute=full", "parallel.data_sharding=none",
        "training.overlap.dp_param_gather=false"}},
      {"llama3-70b-1024gpu", {"parallel.data_sharding=params"}},
      {"llama3-70b-1024gpu", {"parallel.data_sharding=params", "parallel.fsdp_shard_group=8"}},
      {"llama3-70b-64gpu-b200", {"parallel.data_sharding=grads"}},
      {"llama3-70b-64gpu-b200",
       {"parallel.data_sharding=params", "parallel.vpp=1", "training.schedule=1f1b"}},
      {"qwen3-30b-a3b-8gpu", {"parallel.data_sharding=params"}},
      {"llama3-8b-8gpu-b300-fp8", {"parallel.data_sharding=params"}},
      {"llama3-8b-8gpu-zbv", {"training.distributed_optimizer=false", "training.recompute=none"}},
      {"llama3-8b-8gpu-zbv",
       {"training.distributed_optimizer=false", "training.recompute=none",
        "training.schedule=dualpipev"}},
  };
  for (const auto& [name, overrides] : variants) {
    const RunConfig config = load_run_config(example_path(name), overrides);
    const TorchTitanExport exported = export_torchtitan_toml(config);
    INFO(name << "\n" << exported.toml << joined(exported.notes));
    CHECK(exported.notes.empty());
    const RunConfig back = reimport(config, exported.toml);
    // The same TOML again: every field export writes is read back to the same value.
    CHECK(without_job(export_torchtitan_toml(back).toml) == without_job(exported.toml));
    // And the same job: parameters, FLOPs, layout and memory per stage.
    const std::int64_t tp = config.parallel.tp;
    CHECK(total_parameters(back.model, tp) == total_parameters(config.model, tp));
    CHECK(
        iteration_flops(back.model, back.training, tp, back.num_gpus).hardware_per_iteration ==
        iteration_flops(config.model, config.training, tp, config.num_gpus).hardware_per_iteration);
    CHECK(back.layout.sizes.dp == config.layout.sizes.dp);
    CHECK(back.layout.sizes.cp == config.layout.sizes.cp);
    CHECK(back.layout.vpp == config.layout.vpp);
    CHECK(layers_per_virtual_stage(back.layout) == layers_per_virtual_stage(config.layout));
    CHECK(back.layout.num_microbatches == config.layout.num_microbatches);
    CHECK(back.layout.schedule == config.layout.schedule);
    CHECK(back.layout.data_sharding == config.layout.data_sharding);
    CHECK(back.layout.dp_shards() == config.layout.dp_shards());
    CHECK(back.layout.expert.ep == config.layout.expert.ep);
    CHECK(back.training.quantization == config.training.quantization);
    CHECK(back.training.grad_reduce_dtype == config.training.grad_reduce_dtype);
    CHECK(back.training.overlap.tp_comm == config.training.overlap.tp_comm);
    const MemoryReport before = memory_report(config.model, config.layout, config.training, 80e9);
    const MemoryReport after = memory_report(back.model, back.layout, back.training, 80e9);
    CHECK(after.peak_bytes == before.peak_bytes);
  }
}

TEST_CASE("an interleaved layout with async TP is written as TorchTitan's fields") {
  const RunConfig config =
      load_run_config(example_path("llama3-70b-1024gpu"), {"parallel.data_sharding=params"});
  const std::string toml = export_torchtitan_toml(config).toml;
  // 1024 GPUs / (tp 8 · pp 4) = FSDP over 32; the global batch 512 is 16 per data-parallel rank
  // in one pipeline schedule; vpp 5 is not TorchTitan's default of 2 stages per rank, so the
  // 20 model parts are listed.
  CHECK_THAT(toml, Contains("name = \"llama3\"\nflavor = \"70B\"\n"));
  CHECK_THAT(toml, Contains("local_batch_size = 16\nglobal_batch_size = 512\n"));
  CHECK_THAT(toml, Contains("data_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 32\n"
                            "fsdp_reshard_after_forward = \"always\"\n"));
  CHECK_THAT(toml, Contains("tensor_parallel_degree = 8\nenable_async_tensor_parallel = true\n"));
  CHECK_THAT(toml, Contains("pipeline_parallel_schedule = \"Interleaved1F1B\"\n"));
  CHECK_THAT(toml, Contains("[\"tok_embeddings\", \"layers.0\", \"layers.1\", \"layers.2\", "
                            "\"layers.3\"],\n  [\"layers.4\""));
  CHECK_THAT(toml, Contains("[compile]\nenable = true\n"));
}

TEST_CASE("what TorchTitan cannot express is named in the notes") {
  const auto notes = [](const std::string& name, const std::vector<std::string>& overrides = {}) {
    return joined(export_torchtitan_toml(load_run_config(example_path(name), overrides)).notes);
  };
  CHECK_THAT(notes("llama3-70b-1024gpu"), Contains("optimizer (ZeRO-1) has no FSDP2 equivalent"));
  CHECK_THAT(notes("llama3-8b-16gpu-fsdp"), Contains("written as per-op selective checkpointing"));
  CHECK_THAT(notes("llama2-7b-32k-cp-16gpu"), Contains("has no TorchTitan flavour"));
  CHECK_THAT(notes("deepseek-v3-256gpu-gb200-nvl72"),
             Contains("TorchTitan trains no multi-token-prediction layer"));
  CHECK_THAT(notes("llama3-8b-16gpu-fsdp", {"parallel.order=tp-cp-ep-pp-dp"}),
             Contains("parallel.order"));
  CHECK_THAT(notes("llama3-8b-16gpu-fsdp", {"training.cuda_graphs=per_layer"}),
             Contains("training.cuda_graphs per_layer has no TorchTitan job config field"));
  CHECK_THAT(notes("llama3-70b-64gpu-b200", {"training.schedule=zb_h1", "parallel.vpp=1"}),
             Contains("training.schedule zb_h1"));
}
