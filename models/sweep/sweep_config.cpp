#include "models/sweep/sweep_config.hpp"

#include <filesystem>

#include "models/hugging_face_config.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

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
  base.document = standalone_document(path, overrides);
  if (num_gpus > 0) base.document["num_gpus"] = num_gpus;
  base.document.erase("description");
  base.parsed = run_config_from_json(trivial_layout(base.document), path);
  base.num_gpus = base.document.value("num_gpus", std::int64_t{1});
  return base;
}

std::vector<std::string> point_overrides(const SweepBase& base, const SweepPoint& p) {
  const auto flag = [](bool on) { return on ? std::string("true") : std::string("false"); };
  std::vector<std::string> o{
      "parallel.dp=null",  // follows from the sizes
      "parallel.first_stage_layers=null",
      "parallel.last_stage_layers=null",
      "parallel.pipeline_layout=null",  // a layout fixes pp and vpp
      "parallel.tp=" + std::to_string(p.tp),
      "parallel.sequence_parallel=" + flag(p.sequence_parallel && p.tp > 1),
      "parallel.cp=" + std::to_string(p.cp),
      "parallel.pp=" + std::to_string(p.pp),
      "parallel.vpp=" + std::to_string(p.vpp),
  };
  if (base.parsed.model.moe) {
    o.push_back("parallel.ep=" + std::to_string(p.ep));
    o.push_back("parallel.etp=" + std::to_string(p.etp));
    o.push_back(std::string("parallel.moe_dispatcher=") + to_string(p.dispatcher));
  }
  o.push_back("training.micro_batch=" + std::to_string(p.micro_batch));
  o.push_back(std::string("training.recompute=") + to_string(p.recompute));
  o.push_back("training.distributed_optimizer=" + flag(p.distributed_optimizer));
  o.push_back(p.sharding ? std::string("parallel.data_sharding=\"") + to_string(*p.sharding) + "\""
                         : std::string("parallel.data_sharding=null"));
  o.push_back("training.schedule=" + effective_schedule(p));
  for (const char* key : {"tp_comm", "dp_grad_reduce", "dp_param_gather"}) {
    o.push_back(std::string("training.overlap.") + key + "=" + flag(p.overlap));
  }
  // Shared experts beside the exchanges where Megatron-Core allows it.
  const auto& moe = base.parsed.model.moe;
  if (moe && moe->shared_ffn_hidden > 0) {
    o.push_back("training.overlap.shared_expert=" +
                flag(p.overlap && overlaps_shared_experts(p.dispatcher)));
  }
  if (p.offload == SweepOffload::kNone) {
    o.push_back("training.offload=null");
  } else if (p.offload == SweepOffload::kActivations) {
    o.push_back("training.offload={\"activations\": true}");
  } else if (p.offload == SweepOffload::kOptimizer) {
    // Megatron's --optimizer-cpu-offload needs the precision-aware optimizer.
    o.push_back("training.offload={\"optimizer_fraction\": 1}");
    o.push_back("training.optimizer.precision_aware=true");
  }
  if (p.cuda_graphs) o.push_back(std::string("training.cuda_graphs=") + to_string(*p.cuda_graphs));
  if (p.placement) o.push_back("placement.gpus_per_domain=" + std::to_string(*p.placement));
  o.push_back("description=\"wallsim sweep point " + point_id(p) + "\"");
  return o;
}

nlohmann::json point_config(const SweepBase& base, const SweepPoint& p) {
  nlohmann::json doc = base.document;
  for (const auto& assignment : point_overrides(base, p)) apply_override(doc, assignment);
  return doc;
}

RunConfig point_run_config(const SweepBase& base, const SweepPoint& p) {
  return run_config_from_json(base.document, base.file, point_overrides(base, p));
}

}  // namespace wallsim::models
