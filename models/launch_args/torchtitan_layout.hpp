// What `wallsim import torchtitan` and `export torchtitan` share: TorchTitan's model flavours
// that wallsim ships a model for, its pipeline schedules, and how it splits decoder layers over
// pipeline stages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wallsim::models {

struct Layout;

// A TorchTitan [model] name and flavor (the keys of the model's flavour table, e.g.
// torchtitan/models/llama3/__init__.py) with the shipped wallsim model of the same shape.
struct TorchTitanFlavor {
  const char* name;        // "llama3"
  const char* flavor;      // "8B"
  const char* model_file;  // "configs/models/llama3-8b.json"
  const char* model_name;  // that file's "name"
};

const std::vector<TorchTitanFlavor>& torchtitan_flavors();
const TorchTitanFlavor* find_torchtitan_flavor(const std::string& name, const std::string& flavor);
// By the wallsim model's "name" (what a loaded run config holds).
const TorchTitanFlavor* find_torchtitan_flavor_of_model(const std::string& model_name);
std::string torchtitan_flavor_names();  // "llama3 8B, llama3 70B, …"

// torch.distributed.pipelining's schedule names as wallsim runs them.
struct TorchTitanSchedule {
  const char* name;           // "Interleaved1F1B"
  bool multi_stage;           // PipelineScheduleMulti: TorchTitan puts 2 stages per rank by default
  const char* wallsim;        // training.schedule; nullptr: not modelled
  const char* approximation;  // a warning when simulated as another schedule; nullptr: exact
};
const std::vector<TorchTitanSchedule>& torchtitan_schedules();
const TorchTitanSchedule* find_torchtitan_schedule(const std::string& name);

// Decoder layers per virtual stage as TorchTitan's generate_llm_fqn_per_model_part splits them
// (torchtitan/distributed/pipeline_parallel.py): the embedding counts as `input_weight` layers
// and the norm with the output layer as `output_weight`; the stages share layers + weights as
// evenly as integers allow, the first ones taking the remainder. nullopt where TorchTitan would
// assert (a stage with no layer, a weight larger than a stage's share).
std::optional<std::vector<std::int64_t>> torchtitan_stage_layers(std::int64_t stages,
                                                                 std::int64_t layers,
                                                                 std::int64_t input_weight,
                                                                 std::int64_t output_weight);

// Decoder layers per virtual stage in chain order, as `layout` places them.
std::vector<std::int64_t> layers_per_virtual_stage(const Layout& layout);

// Virtual stages as parallel.pipeline_layout ("Et*8|t*9|t*8|t*7L"): E on the first, L on the
// last; stages listed in chain order, as TorchTitan lists its model parts.
std::string layout_of_stages(const std::vector<std::int64_t>& layers_per_stage);

// parallelism.module_fqns_per_model_part for the stages: tok_embeddings, layers.i, norm and
// output, the module names of TorchTitan's decoder models.
std::vector<std::vector<std::string>> fqns_of_stages(const std::vector<std::int64_t>& layers);

}  // namespace wallsim::models
