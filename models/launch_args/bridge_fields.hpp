// The Megatron-Bridge fields `wallsim import bridge` reads, each with the Megatron-LM option it
// becomes (bridge_import.hpp), and Bridge's mixed-precision recipes.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wallsim::models {

struct BridgeField {
  enum class Kind {
    kValue,       // a scalar: --flag value (null: nothing)
    kSwitch,      // true: --flag
    kOffSwitch,   // false: --flag (share_embeddings_and_output_weights false: --untie-…)
    kList,        // a sequence or a scalar: --flag v1 v2 …
    kNonDefault,  // a scalar other than `fallback`: --flag value
    kCustom,      // read by bridge_import.cpp itself
  };
  enum class Gate { kAlways, kMoe, kMla, kFp8, kCrossEntropyFusion };

  const char* section;  // "model", "train", "ddp", "optimizer", "dist", "comm_overlap"
  const char* key;
  const char* flag;
  Kind kind = Kind::kValue;
  Gate gate = Gate::kAlways;
  const char* fallback = "";  // kNonDefault
};

const std::vector<BridgeField>& bridge_fields();

// A mixed-precision recipe by name (megatron/bridge/training/mixed_precision.py): the fields
// it sets, as YAML text per field name ("true", "hybrid", "null", …). nullopt: unknown name.
struct BridgePrecisionRecipe {
  std::vector<std::pair<std::string, std::string>> fields;
};
std::optional<BridgePrecisionRecipe> bridge_precision_recipe(const std::string& name);
std::string bridge_precision_recipe_names();

}  // namespace wallsim::models
