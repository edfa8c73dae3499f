// The layout half of `wallsim import megatron`: Megatron-LM's parallelism, batch, precision,
// recompute, overlap and kernel options as a run config's `parallel` and `training` sections
// (keys in models/README.md), with the checks Megatron makes that wallsim's loader relaxes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/launch_args/megatron_args.hpp"

namespace wallsim::models {

// `config` holds `model` already; adds `parallel` and `training`. Throws InputError naming the
// option; notes collect what is read but not applied as given.
void read_megatron_layout(MegatronArgs& args, std::int64_t num_gpus, nlohmann::json& config,
                          std::vector<std::string>& notes);

}  // namespace wallsim::models
