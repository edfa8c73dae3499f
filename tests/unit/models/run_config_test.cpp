#include "models/run_config.hpp"

#include <filesystem>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/flops.hpp"
#include "models/memory.hpp"
#include "models/report_json.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/network/model/network_model.hpp"
#include "test_models.hpp"

using Catch::Matchers::Contains;
using nlohmann::json;
using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

const std::string kExample = source_path("configs/examples/llama3-8b-8gpu.json");

json example_json() {
  return load_json_file(kExample);
}

}  // namespace

TEST_CASE("every shipped example parses and yields FLOPs and memory", "[models][config]") {
  for (const auto& entry : std::filesystem::directory_iterator(source_path("configs/examples"))) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path().string());
    const RunConfig config = load_run_config(entry.path().string());
    const auto flops =
        iteration_flops(config.model, config.training, config.layout.sizes.tp, config.num_gpus);
    CHECK(flops.model_per_iteration > 0);
    const auto memory = memory_report(config.model, config.layout, config.training, 80e9);
    CHECK(memory.stages.size() == static_cast<std::size_t>(config.layout.sizes.pp));
    CHECK(memory.peak_bytes > 0);
  }
}

TEST_CASE("paths resolve relative to the config and the sections are typed", "[models][config]") {
  const RunConfig config = load_run_config(kExample);
  CHECK(config.model.name == "Llama 3 8B");
  CHECK(config.model.layers == 32);
  CHECK(config.cluster.gpu == "h100-sxm");
  CHECK(config.num_gpus == 8);
  CHECK(config.layout.sizes.dp == 4);  // 8 GPUs / tp 2
  CHECK(config.training.distributed_optimizer);
  CHECK(config.calibration_path.empty());  // the cluster's GPU profile applies
}

TEST_CASE("set overrides apply to the merged config, model file included", "[models][config]") {
  const RunConfig config =
      load_run_config(kExample, {"model.layers=40", "training.global_batch=256", "parallel.tp=4"});
  CHECK(config.model.layers == 40);
  CHECK(config.training.global_batch == 256);
  CHECK(config.layout.sizes.dp == 2);
}

TEST_CASE("errors name the file a value came from", "[models][config]") {
  CHECK_THROWS_WITH(load_run_config(kExample, {"model.heads=0"}),
                    Contains("llama3-8b.json (with --set): heads = 0"));
  CHECK_THROWS_WITH(
      load_run_config(kExample, {"training.recompute=some"}),
      Contains("llama3-8b-8gpu.json: training.recompute") && Contains("none, selective, full"));
  CHECK_THROWS_WITH(load_run_config(kExample, {"parallel.tpp=2"}),
                    Contains("parallel.tpp") && Contains("unknown key"));
  CHECK_THROWS_WITH(load_run_config(kExample, {"parallel.ep=2"}),
                    Contains("parallel.ep = 2") && Contains("dense"));
  // training.schedule selects from the registry; without it vpp > 1 means interleaved.
  CHECK_THROWS_WITH(load_run_config(kExample, {"training.schedule=zb"}),
                    Contains("training.schedule") && Contains("1f1b, interleaved"));
  CHECK_THROWS_WITH(
      load_run_config(kExample, {"parallel.pp=2", "parallel.vpp=2", "training.schedule=1f1b"}),
      Contains("training.schedule = 1f1b") && Contains("\"interleaved\""));
  CHECK_THROWS_WITH(load_run_config(kExample, {"parallel.pp=2", "training.schedule=interleaved"}),
                    Contains("parallel.vpp = 1"));
  CHECK(load_run_config(kExample, {"parallel.pp=2", "parallel.vpp=2"}).layout.schedule->name ==
        "interleaved");
  CHECK_THROWS_WITH(load_run_config(kExample, {"parallel.cp_comm_type=a2a+p2p"}),
                    Contains("parallel.cp_comm_type") && Contains("hierarchical_cp"));
  CHECK_THROWS_WITH(load_run_config(kExample, {"model.moe={\"experts\":8}"}),
                    Contains("llama3-8b.json (with --set): moe.topk"));
  json doc = example_json();
  doc["model"] = "../models/no-such-model.json";
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample),
                    Contains("model") && Contains("file not found"));
  CHECK_THROWS_AS(load_run_config(kExample, {"num_gpus=12"}), InputError);
}

TEST_CASE("simulation.network takes the network models of the registry", "[models][config]") {
  // The valid values an error lists are the registry's names (network_model_names), and each
  // of them parses.
  std::string listed;
  for (const auto& name : network_model_names()) {
    listed += (listed.empty() ? "" : ", ") + name;
    CHECK(load_run_config(kExample, {"simulation.network=" + name}).simulation.network == name);
  }
  CHECK_THROWS_WITH(load_run_config(kExample, {"simulation.network=fluid"}),
                    Contains("simulation.network") && Contains("must be one of: " + listed));
}

TEST_CASE("a Hugging Face config.json serves as the model", "[models][config]") {
  json doc = example_json();
  doc["model"] = "../models/llama3-8b-hf-config.json";
  const RunConfig config = run_config_from_json(doc, kExample, {"model.layers=16"});
  CHECK(config.model.layers == 16);
  CHECK(config.model.kv_heads == 8);
  CHECK(config.model.activation == Activation::swiglu);
}

TEST_CASE("models and clusters may be given inline", "[models][config]") {
  json doc = example_json();
  doc["model"] = {{"layers", 4}, {"hidden", 512}, {"heads", 8}, {"vocab", 1000}};
  const RunConfig config = run_config_from_json(doc, kExample);
  CHECK(config.model.layers == 4);
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample, {"model.norm=batchnorm"}),
                    Contains("llama3-8b-8gpu.json: model.norm"));
}

TEST_CASE("the same config gives byte-identical flops and memory JSON", "[models][config]") {
  auto render = [] {
    const RunConfig c = load_run_config(source_path("configs/examples/llama3-70b-1024gpu.json"));
    const auto flops = iteration_flops(c.model, c.training, c.layout.sizes.tp, c.num_gpus);
    return flops_json(flops, c.layout.notes).dump() +
           memory_json(memory_report(c.model, c.layout, c.training, 80e9)).dump();
  };
  CHECK(render() == render());
}

TEST_CASE("a variant is the source document with more overrides, through the same loader",
          "[models][config]") {
  const RunConfig base = load_run_config(kExample, {"training.global_batch=64"});
  const RunConfig changed = variant_of(base, {"parallel.tp=2", "parallel.pp=2"});
  const RunConfig direct =
      load_run_config(kExample, {"training.global_batch=64", "parallel.tp=2", "parallel.pp=2"});
  CHECK(changed.layout.sizes.tp == 2);
  CHECK(changed.layout.sizes.pp == 2);
  CHECK(changed.layout.sizes.dp == direct.layout.sizes.dp);
  CHECK(changed.training.global_batch == 64);  // the base's own override is kept
  CHECK(changed.overrides == direct.overrides);
  // Validated like any config: the same error as --set would give.
  CHECK_THROWS_WITH(variant_of(base, {"parallel.tp=3"}), Contains("tp·cp·pp = 3·1·1"));
  // A config built in memory varies the same way; null removes a key (its default applies).
  json doc = example_json();
  doc["parallel"]["pp"] = 2;
  const RunConfig in_memory = run_config_from_json(doc, kExample);
  CHECK(variant_of(in_memory, {"parallel.pp=null"}).layout.sizes.pp == 1);
}

TEST_CASE("placement takes a whole-tray share of each NVLink domain for the run",
          "[models][config]") {
  // gb200-nvl72.json: trays of 4 GPUs, racks of 72. A job on 16 of the 18 trays of each rack
  // sees 64-GPU domains, so an expert group of 64 fills one rack exactly.
  json doc = example_json();
  doc["cluster"] = "../clusters/gb200-nvl72.json";
  doc["num_gpus"] = 128;
  doc["parallel"]["tp"] = 1;
  CHECK(run_config_from_json(doc, kExample).cluster.gpus_per_domain() == 72);
  doc["placement"] = {{"gpus_per_domain", 64}};
  const RunConfig config = run_config_from_json(doc, kExample);
  CHECK(config.cluster.gpus_per_domain() == 64);
  CHECK(config.cluster.gpus_per_node == 4);
  doc["placement"]["gpus_per_domain"] = 66;  // not whole trays
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample),
                    Contains("placement.gpus_per_domain") && Contains("multiple"));
  doc["placement"]["gpus_per_domain"] = 76;  // more than the rack
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample), Contains("placement.gpus_per_domain"));
  doc["placement"] = {{"gpus_per_rack", 64}};
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample),
                    Contains("placement.gpus_per_domain") && Contains("missing"));
  doc["placement"] = {{"gpus_per_domain", 64}, {"gpus_per_rack", 64}};
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample), Contains("placement.gpus_per_rack"));
}

TEST_CASE("training.precision names the GEMM dtype and the quantization recipe",
          "[models][config]") {
  json doc = example_json();
  const auto parsed = [&](const char* name) {
    doc["training"]["precision"] = name;
    return run_config_from_json(doc, kExample).training;
  };
  CHECK(parsed("bf16").precision == Dtype::kBf16);
  CHECK(parsed("bf16").quantization == Quantization::kNone);
  CHECK(parsed("fp8").quantization == Quantization::kFp8PerTensor);
  CHECK(parsed("mxfp8").precision == Dtype::kFp8);  // FP8 GEMMs, block scales
  CHECK(parsed("mxfp8").quantization == Quantization::kMxfp8);
  CHECK(parsed("nvfp4").precision == Dtype::kFp4);
  CHECK(parsed("nvfp4").quantization == Quantization::kNvfp4);
  doc["training"]["precision"] = "fp4";
  CHECK_THROWS_WITH(run_config_from_json(doc, kExample),
                    Contains("training.precision") && Contains("mxfp8") && Contains("nvfp4"));
}
