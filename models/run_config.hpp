// A run config (DESIGN.md "Config shape"), parsed once into typed immutable specs.
//
// Loading: the run config file is read; `model` and `cluster` given as paths are loaded and put
// inline (a Hugging Face config.json model is translated to wallsim's model keys first); then
// every `--set a.b=value` override applies to that merged document, so
// `--set model.layers=40` works whatever file the model came from; then everything is parsed,
// unknown keys rejected, and the layout validated (layout.hpp). Errors name the file the value
// came from (with "(with --set)" when an override touched that section), the JSON path, the
// value and what is allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/layout.hpp"
#include "models/model_spec.hpp"
#include "models/parallel_spec.hpp"
#include "models/training_spec.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim::models {

struct RunConfig {
  std::string file;  // the run config as named on the command line ("" when built in memory)
  ModelSpec model;
  ClusterSpec cluster;
  std::int64_t num_gpus = 0;
  ParallelSpec parallel;
  TrainingSpec training;
  SimulationSpec simulation;
  // Calibration profile: a resolved path, or an inline object, or neither (then the shipped
  // profile of cluster.gpu applies).
  std::string calibration_path;
  std::shared_ptr<const nlohmann::json> calibration_inline;
  Layout layout;  // validated, derived from the above
};

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from a document already in memory; relative paths in it resolve against `file`'s
// directory, then the data root.
RunConfig run_config_from_json(nlohmann::json document, const std::string& file,
                               const std::vector<std::string>& overrides = {});

}  // namespace wallsim::models
