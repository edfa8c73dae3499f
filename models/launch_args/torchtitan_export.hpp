// `wallsim export torchtitan`: the TorchTitan job config (TOML) that launches the layout a run
// config simulates: [model] name and flavor of the shipped model, [training] batch, sequence and
// dtypes, [parallelism] the degrees, FSDP2's resharding for parallel.data_sharding, the pipeline
// schedule and its split (module_fqns_per_model_part when it is not TorchTitan's default), CP,
// EP, async TP, [activation_checkpoint], FP8/MXFP8 converters and [compile]. The inverse of
// import_torchtitan_toml on every field it reads (tests/unit/import checks the round trip).
//
// What the run config holds that TorchTitan cannot express (ZeRO-1, zero-bubble schedules at
// one stage per rank, Megatron-style selective recompute, an axis order other than TorchTitan's
// mesh, a model without a TorchTitan flavour, …) is named in `notes`.
#pragma once

#include <string>
#include <vector>

namespace wallsim::models {

struct RunConfig;

struct TorchTitanExport {
  std::string toml;
  std::vector<std::string> notes;
};

TorchTitanExport export_torchtitan_toml(const RunConfig& config);

}  // namespace wallsim::models
