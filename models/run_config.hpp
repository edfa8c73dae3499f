// A run config (README.md "Run config shape"), parsed once into typed immutable specs.
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
#include "models/variability_spec.hpp"
#include "sim/network/topology/cluster_spec.hpp"

namespace wallsim::models {

struct RunConfig {
  std::string file;  // the run config as named on the command line ("" when built in memory)
  ModelSpec model;
  // The cluster file's spec; with `placement.gpus_per_domain` its NVLink domain is the job's
  // share of each domain.
  ClusterSpec cluster;
  std::int64_t num_gpus = 0;
  ParallelSpec parallel;
  TrainingSpec training;
  SimulationSpec simulation;
  VariabilitySpec variability;  // not enabled unless the config has the section
  // Calibration profile: a resolved path, or an inline object, or neither (then the shipped
  // profile of cluster.gpu applies).
  std::string calibration_path;
  std::shared_ptr<const nlohmann::json> calibration_inline;
  Layout layout;  // validated, derived from the above
  // What it was read from: the document as given and the overrides applied to it, in order.
  // A variant of the config is the same document with more overrides (variant_of).
  std::shared_ptr<const nlohmann::json> source;
  std::vector<std::string> overrides;
};

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The same from a document already in memory; relative paths in it resolve against `file`'s
// directory, then the data root.
RunConfig run_config_from_json(nlohmann::json document, const std::string& file,
                               const std::vector<std::string>& overrides = {});

// The one way to vary a config: `base`'s source with its overrides and then `more`
// (`path=value`, as --set takes them), read and validated by the same loader. Used by --set,
// the fit suggestions, the sensitivities and the sweep's points. Throws InputError as
// load_run_config does.
RunConfig variant_of(const RunConfig& base, const std::vector<std::string>& more);

// The document at `path` with `overrides` applied, made to stand alone: the model and cluster
// sections read in from their files and a calibration file named by its absolute path (what a
// sweep writes for each point). Throws InputError.
nlohmann::json standalone_document(const std::string& path,
                                   const std::vector<std::string>& overrides);

}  // namespace wallsim::models
