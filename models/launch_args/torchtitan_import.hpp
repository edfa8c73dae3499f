// `wallsim import torchtitan`: a TorchTitan job config (the TOML of train_configs/*.toml, read as
// torchtitan/config/job_config.py defines it) as a wallsim run config.
//
// [model] name and flavor pick a shipped wallsim model of the same shape
// (torchtitan_layout.hpp; others are refused, naming the ones there are). [training] gives the
// sequence length, the batch (local_batch_size per data-parallel rank, global_batch_size or
// local × dp) and the precision; [parallelism] the degrees, FSDP2 (→ parallel.data_sharding),
// the pipeline schedule and split, CP and EP; [activation_checkpoint] the recompute;
// model.converters with [float8] / [quantize.linear.*] FP8 or MXFP8; [compile] whether async TP
// takes effect. What TorchTitan does that wallsim approximates is a warning naming both sides
// (HSDP, GPipe, per-op selective checkpointing, …); fields set and not read, and fields or
// sections TorchTitan does not define, are warnings by name. The GPU count is the product of
// the degrees, or --num-gpus when data_parallel_shard_degree is -1 (the GPUs left over).
// Contradictions (degrees that do not multiply to the GPUs, a global batch that is not a
// multiple of local × dp) throw InputError naming file:line:column, the field and the value.
#pragma once

#include <string>
#include <string_view>

#include "models/launch_args/megatron_import.hpp"

namespace wallsim::models {

// `options.vocab` is not used (the shipped model has its vocabulary).
MegatronImport import_torchtitan_toml(std::string_view text, const std::string& source,
                                      const MegatronImportOptions& options);

MegatronImport import_torchtitan_file(const std::string& path,
                                      const MegatronImportOptions& options);

}  // namespace wallsim::models
