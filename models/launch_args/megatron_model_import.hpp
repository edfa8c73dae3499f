// The model half of `wallsim import megatron`: Megatron-LM's model-shape, MoE, MLA and MTP
// options as wallsim's model JSON (keys in models/README.md). Defaults are Megatron's
// (megatron/training/arguments.py), written out where they differ from wallsim's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/launch_args/megatron_args.hpp"

namespace wallsim::models {

// Throws InputError naming the option. `vocab` is the tokenizer's vocabulary when the
// arguments do not give --vocab-size; notes collect what is read but not applied.
nlohmann::json megatron_model_json(MegatronArgs& args, std::optional<std::int64_t> vocab,
                                   std::vector<std::string>& notes);

// Megatron's --moe-layer-freq: an integer N (layer i is MoE iff i % N == 0) or a Python list
// expression such as "([0]*3+[1]*58)" or "[0,0,1,1]" (1 = MoE), as wallsim's `layer_freq` or
// `first_dense_layers`. Throws InputError for a pattern wallsim cannot express.
void read_moe_layer_freq(MegatronArgs& args, std::int64_t layers, nlohmann::json& moe);

}  // namespace wallsim::models
