#include "models/sweep/sweep_config.hpp"

#include <filesystem>

#include "models/hugging_face_config.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

std::string resolve(const nlohmann::json& reference, const std::string& referring,
                    const std::string& key) {
  const std::string text = reference.get<std::string>();
  auto resolved = resolve_data_path(text, referring);
  if (!resolved) {
    throw InputError(referring, key, "\"" + text + "\"",
                     "file not found (tried next to the config, then the wallsim data root)");
  }
  return std::filesystem::absolute(*resolved).lexically_normal().string();
}

void inline_section(nlohmann::json& doc, const std::string& key, const std::string& referring) {
  if (!doc.contains(key) || !doc.at(key).is_string()) return;
  const std::string file = resolve(doc.at(key), referring, key);
  nlohmann::json loaded = load_json_file(file);
  if (key == "model" && is_hugging_face_config(loaded)) {
    loaded = hugging_face_to_model_json(JsonNode(loaded, file, ""));
  }
  if (loaded.is_object() && !loaded.contains("name")) {
    loaded["name"] = std::filesystem::path(file).stem().string();
  }
  doc[key] = std::move(loaded);
}

// The base with a layout every model accepts: it checks the model, cluster and training keys.
nlohmann::json trivial_layout(nlohmann::json doc) {
  doc["num_gpus"] = 1;
  doc["parallel"] = nlohmann::json::object();
  doc["training"]["micro_batch"] = 1;
  doc["training"].erase("schedule");
  return doc;
}

}  // namespace

SweepBase load_sweep_base(const std::string& path, const std::vector<std::string>& overrides,
                          std::int64_t num_gpus) {
  SweepBase base;
  base.file = path;
  base.document = load_json_file(path);
  if (!base.document.is_object()) JsonNode(base.document, path, "").fail("must be a JSON object");
  inline_section(base.document, "model", path);
  inline_section(base.document, "cluster", path);
  for (const auto& assignment : overrides) apply_override(base.document, assignment);
  inline_section(base.document, "model", "");
  inline_section(base.document, "cluster", "");
  if (base.document.contains("calibration") && base.document.at("calibration").is_string()) {
    base.document["calibration"] = resolve(base.document.at("calibration"), path, "calibration");
  }
  if (num_gpus > 0) base.document["num_gpus"] = num_gpus;
  base.document.erase("description");
  base.parsed = run_config_from_json(trivial_layout(base.document), path);
  base.num_gpus = base.document.value("num_gpus", std::int64_t{1});
  return base;
}

nlohmann::json point_config(const SweepBase& base, const SweepPoint& p) {
  nlohmann::json doc = base.document;
  nlohmann::json parallel = doc.value("parallel", nlohmann::json::object());
  for (const char* key : {"dp", "first_stage_layers", "last_stage_layers"}) parallel.erase(key);
  parallel["tp"] = p.tp;
  parallel["sequence_parallel"] = p.sequence_parallel && p.tp > 1;
  parallel["cp"] = p.cp;
  parallel["pp"] = p.pp;
  parallel["vpp"] = p.vpp;
  if (base.parsed.model.moe) {
    parallel["ep"] = p.ep;
    parallel["etp"] = p.etp;
    parallel["moe_dispatcher"] = to_string(p.dispatcher);
  }
  doc["parallel"] = parallel;
  nlohmann::json& training = doc["training"];
  training["micro_batch"] = p.micro_batch;
  training["recompute"] = to_string(p.recompute);
  training["distributed_optimizer"] = p.distributed_optimizer;
  training["schedule"] = p.vpp > 1 ? "interleaved" : "1f1b";
  nlohmann::json& overlap = training["overlap"];
  for (const char* key : {"tp_comm", "dp_grad_reduce", "dp_param_gather"}) overlap[key] = p.overlap;
  doc["description"] = "wallsim sweep point " + point_id(p);
  return doc;
}

}  // namespace wallsim::models
