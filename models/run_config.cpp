#include "models/run_config.hpp"

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "models/hugging_face_config.hpp"
#include "models/placement_hint.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

// Where each section's JSON came from: a file of its own (path "$") or the run config.
struct SectionSource {
  std::string file;
  std::string path;
};
using Sources = std::map<std::string, SectionSource, std::less<>>;

std::string resolve_or_fail(const JsonNode& node) {
  const std::string reference = node.as_string();
  auto resolved = resolve_data_path(reference, node.file() == "command line" ? "" : node.file());
  if (!resolved) node.fail("file not found (tried next to the config, then the wallsim data root)");
  return *resolved;
}

// Replaces a path-valued section by the object in that file.
void inline_section(nlohmann::json& doc, const char* key, const std::string& referring,
                    Sources& sources) {
  if (!doc.contains(key) || !doc.at(key).is_string()) return;
  const std::string file = resolve_or_fail(JsonNode(doc.at(key), referring, key));
  nlohmann::json loaded = load_json_file(file);
  if (std::string(key) == "model" && is_hugging_face_config(loaded)) {
    loaded = hugging_face_to_model_json(JsonNode(loaded, file, ""));
  }
  if (loaded.is_object() && !loaded.contains("name")) {
    loaded["name"] = std::filesystem::path(file).stem().string();
  }
  doc[key] = std::move(loaded);
  sources[key] = {file, ""};
}

void inline_sections(nlohmann::json& doc, const std::string& referring, Sources& sources) {
  if (doc.contains("model") && is_hugging_face_config(doc.at("model"))) {
    doc["model"] = hugging_face_to_model_json(JsonNode(doc.at("model"), referring, "model"));
  }
  inline_section(doc, "model", referring, sources);
  inline_section(doc, "cluster", referring, sources);
}

void mark_overridden(const std::vector<std::string>& overrides, Sources& sources) {
  for (const auto& assignment : overrides) {
    const auto dot = assignment.find_first_of(".=");
    auto it = sources.find(assignment.substr(0, dot));
    if (it != sources.end() && it->second.file.find("(with --set)") == std::string::npos) {
      it->second.file += " (with --set)";
    }
  }
}

JsonNode section(JsonObject& top, const Sources& sources, const char* key) {
  const JsonNode node = top.at(key);
  auto it = sources.find(key);
  if (it == sources.end()) return node;
  return JsonNode(node.json(), it->second.file, it->second.path);
}

void read_calibration(JsonObject& top, RunConfig& config) {
  auto node = top.find("calibration");
  if (!node) return;
  if (node->is_object()) {
    config.calibration_inline = std::make_shared<const nlohmann::json>(node->json());
  } else {
    config.calibration_path = resolve_or_fail(*node);
  }
}

// parallel.data_sharding decides training.distributed_optimizer (any sharding of the optimizer
// state is a distributed optimizer); stated both ways, they must agree.
void reconcile_data_sharding(const JsonNode& training, std::optional<JsonNode> parallel,
                             RunConfig& config) {
  const auto sharding = config.parallel.data_sharding;
  if (!sharding) return;
  const bool sharded = *sharding != DataSharding::kNone;
  if (training.json().contains("distributed_optimizer") &&
      config.training.distributed_optimizer != sharded) {
    JsonObject(*parallel)
        .at("data_sharding")
        .fail(std::string("contradicts training.distributed_optimizer = ") +
              (sharded ? "false" : "true") + ": \"" + to_string(*sharding) + "\" " +
              (sharded ? "shards" : "does not shard") +
              " the optimizer state (drop one of the two keys)");
  }
  config.training.distributed_optimizer = sharded;
}

// Megatron's precision-aware optimizer runs only inside the distributed optimizer
// (optimizer_config.py asserts use_distributed_optimizer).
void check_precision_aware_optimizer(const JsonNode& training, const RunConfig& config) {
  if (!config.training.optimizer.precision_aware || config.training.distributed_optimizer) return;
  JsonObject(JsonObject(training).at("optimizer"))
      .at("precision_aware")
      .fail(
          "needs the distributed optimizer (training.distributed_optimizer true or a "
          "parallel.data_sharding that shards the optimizer state), as Megatron's "
          "--use-precision-aware-optimizer does");
}

// Megatron asserts --use-precision-aware-optimizer with --optimizer-cpu-offload; the CPU's step
// is timed from the host's DRAM bandwidth, which the cluster must state.
void check_cpu_optimizer(const JsonNode& training, const RunConfig& config) {
  if (config.training.offload_optimizer_states > 0) {
    const JsonNode states = JsonObject(JsonObject(training).at("offload")).at("optimizer_states");
    if (!config.training.distributed_optimizer) {
      states.fail(
          "stages the distributed optimizer's shards: it needs training.distributed_optimizer "
          "true, as Megatron's chunked optimizer-state offload does");
    }
    if (config.training.cuda_graphs == CudaGraphs::kFullIteration) {
      states.fail(
          "cannot be captured: Megatron refuses full-iteration CUDA graphs with the chunked "
          "optimizer-state offload");
    }
  }
  if (config.training.offload_optimizer_fraction == 0) return;
  const JsonNode fraction = JsonObject(JsonObject(training).at("offload")).at("optimizer_fraction");
  if (!config.training.optimizer.precision_aware) {
    fraction.fail(
        "the hybrid CPU optimizer needs training.optimizer.precision_aware true, as Megatron's "
        "--optimizer-cpu-offload needs --use-precision-aware-optimizer");
  }
  if (!config.cluster.host_memory_GBps) {
    fraction.fail("the CPU's Adam step is timed from the host's DRAM bandwidth, which cluster \"" +
                  config.cluster.name + "\" does not give: set node.host_memory_GBps");
  }
}

// placement.gpus_per_domain: the job's share of each NVLink domain, whole nodes, at most the
// domain. Ranks fill that many GPUs of one domain before the next, as a scheduler does that
// places a job on 16 of an NVL72 rack's 18 trays (64 GPUs, so that groups of 64 fit a rack);
// the GPUs left out do not exist for the run, so its domains are of that size.
void read_placement(JsonObject& top, RunConfig& config) {
  auto node = top.find("placement");
  if (!node) return;
  JsonObject placement(*node);
  const JsonNode share = placement.at("gpus_per_domain");
  const int per_node = config.cluster.gpus_per_node;
  const auto gpus = static_cast<int>(share.as_integer(per_node, config.cluster.gpus_per_domain()));
  if (gpus % per_node != 0) {
    share.fail("must be whole nodes: a multiple of the cluster's node.gpus_per_node (" +
               std::to_string(per_node) + ")");
  }
  placement.finish();
  config.cluster.nvlink.domain_gpus = gpus;
}

void read_sections(JsonObject& top, const Sources& sources, RunConfig& config) {
  config.model = parse_model_spec(section(top, sources, "model"));
  config.cluster = parse_cluster_spec(section(top, sources, "cluster"));
  read_placement(top, config);
  config.num_gpus = top.integer("num_gpus", 1);
  auto parallel = top.find("parallel");
  if (parallel) config.parallel = parse_parallel_spec(*parallel);
  const JsonNode training = top.at("training");
  config.training = parse_training_spec(training);
  reconcile_data_sharding(training, parallel, config);
  check_precision_aware_optimizer(training, config);
  check_cpu_optimizer(training, config);
  if (auto node = top.find("simulation")) config.simulation = parse_simulation_spec(*node);
  if (auto node = top.find("variability")) {
    config.variability = parse_variability_spec(
        *node, config.num_gpus, config.cluster.gpus_per_node, config.cluster.nic.per_node);
  }
  read_calibration(top, config);
  top.string_or("description", "");
}

}  // namespace

RunConfig run_config_from_json(nlohmann::json document, const std::string& file,
                               const std::vector<std::string>& overrides) {
  const std::string label = file.empty() ? "config" : file;
  if (!document.is_object()) JsonNode(document, label, "").fail("must be a JSON object");
  auto source = std::make_shared<const nlohmann::json>(document);
  Sources sources;
  inline_sections(document, label, sources);
  for (const auto& assignment : overrides) apply_override(document, assignment);
  inline_sections(document, "command line", sources);  // a section --set to a new path
  mark_overridden(overrides, sources);

  RunConfig config;
  config.file = file;
  config.source = std::move(source);
  config.overrides = overrides;
  JsonObject top(JsonNode(document, label, ""));
  read_sections(top, sources, config);
  top.finish();
  if (config.model.name.empty()) config.model.name = "model";
  config.layout =
      make_layout(config.model, config.parallel, config.training, config.num_gpus, label);
  const std::string hint =
      placement_hint(config.layout, config.cluster.gpus_per_domain(), config.cluster.gpus_per_node);
  if (!hint.empty()) config.layout.notes.push_back(hint);
  return config;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  return run_config_from_json(load_json_file(path), path, overrides);
}

RunConfig variant_of(const RunConfig& base, const std::vector<std::string>& more) {
  if (!base.source) throw std::logic_error("variant_of: the base config has no source document");
  std::vector<std::string> overrides = base.overrides;
  overrides.insert(overrides.end(), more.begin(), more.end());
  return run_config_from_json(*base.source, base.file, overrides);
}

nlohmann::json standalone_document(const std::string& path,
                                   const std::vector<std::string>& overrides) {
  nlohmann::json document = load_json_file(path);
  if (!document.is_object()) JsonNode(document, path, "").fail("must be a JSON object");
  Sources sources;
  inline_sections(document, path, sources);
  for (const auto& assignment : overrides) apply_override(document, assignment);
  inline_sections(document, "command line", sources);
  if (document.contains("calibration") && document.at("calibration").is_string()) {
    document["calibration"] =
        std::filesystem::absolute(
            resolve_or_fail(JsonNode(document.at("calibration"), path, "calibration")))
            .lexically_normal()
            .string();
  }
  return document;
}

}  // namespace wallsim::models
