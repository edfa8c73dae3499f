// The [parallelism] section of a TorchTitan job config as run config keys (torchtitan_import.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/launch_args/torchtitan_toml.hpp"

namespace wallsim::models {

// TorchTitan's device mesh: dp_replicate × dp_shard × cp × tp × pp = the GPUs; EP and ETP reuse
// those ranks for the experts.
struct TorchTitanDegrees {
  std::int64_t replicate = 1;
  std::int64_t shard = 1;
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  std::int64_t pp = 1;
  std::int64_t ep = 1;
  std::int64_t etp = 1;
  std::int64_t num_gpus = 1;
  std::int64_t dp() const { return replicate * shard; }
};

// The degrees, data_parallel_shard_degree -1 resolved against `num_gpus` (--num-gpus), which is
// required then and must equal the product otherwise. Throws InputError.
TorchTitanDegrees read_torchtitan_degrees(TorchTitanToml& toml,
                                          std::optional<std::int64_t> num_gpus);

struct TorchTitanModelShape {
  std::int64_t layers = 0;
  bool moe = false;
};

// Fills config["parallel"] and config["training"]["overlap"] / ["schedule"]: TP with sequence
// parallelism, FSDP2 / DDP / HSDP as data_sharding, CP, EP, the pipeline schedule and its split.
// `compile`: [compile] enable, which async TP needs.
void read_torchtitan_parallel(TorchTitanToml& toml, const TorchTitanDegrees& degrees,
                              const TorchTitanModelShape& model, bool compile,
                              nlohmann::json& config, std::vector<std::string>& warnings);

}  // namespace wallsim::models
