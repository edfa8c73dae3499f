// `wallsim import bridge`: a Megatron-Bridge `ConfigContainer` dumped as YAML (what Bridge's
// recipes and `scripts/performance` write, every field explicit) as a wallsim run config.
//
// Bridge's fields are Megatron-Core's TransformerConfig, DistributedDataParallelConfig and
// OptimizerConfig fields, most of them the argparse options of Megatron-LM with '_' for '-'. The
// sections wallsim reads are translated into those options (the field → option table in
// bridge_import.cpp) and go through import_megatron_words, so the mapping, the defaults that
// apply and the checks are the Megatron importer's. Before that the `mixed_precision` section,
// a recipe name or a MixedPrecisionConfig, overrides the same-named fields of `model`, `ddp` and
// `optimizer`, as Bridge's MixedPrecisionConfig.setup does
// (megatron/bridge/training/mixed_precision.py). The sequence length is the dataset's
// (`dataset.seq_length` or `dataset.sequence_length`; a `model.seq_length` that differs is a
// warning). The GPU count is not in the file: MegatronImportOptions::num_gpus is required.
//
// Warnings and errors name Bridge's fields (model.num_layers), not Megatron's options. Fields
// that are set (not null, false, 0 or empty) and not read are listed by name, per section;
// sections wallsim does not read (checkpoint, logger, …) are listed once.
#pragma once

#include <string>
#include <string_view>

#include "models/launch_args/megatron_import.hpp"

namespace wallsim::models {

// Throws InputError naming `source`, the line and the field.
MegatronImport import_bridge_yaml(std::string_view text, const std::string& source,
                                  const MegatronImportOptions& options);

MegatronImport import_bridge_file(const std::string& path, const MegatronImportOptions& options);

}  // namespace wallsim::models
