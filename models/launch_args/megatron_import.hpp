// `wallsim import megatron`: a Megatron-LM launch line (or a shell script holding one, or bare
// arguments) as a wallsim run config.
//
// The arguments are read as Megatron's argparse reads them (megatron_args.hpp) and mapped to
// the run config's keys (models/README.md), with Megatron's defaults where they differ from
// wallsim's (dropout 0.1, tied embeddings, LayerNorm, GeLU, top-2 routing, the allgather token
// dispatcher, no grouped GEMM, expert TP = TP, fp32 training without --bf16). The produced
// config is then loaded by the run config loader, so every check wallsim makes applies; the
// checks Megatron makes that wallsim relaxes (layers dividing the pipeline, param-gather overlap
// without the distributed optimizer, TP overlap without sequence parallelism) are made here.
// Every option that is not applied is named in a warning (MegatronArgs::unread_report).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/launch_args/shell_command.hpp"

namespace wallsim::models {

struct MegatronImportOptions {
  // GPUs of the job; without it, torchrun's --nproc_per_node × --nnodes.
  std::optional<std::int64_t> num_gpus;
  // A shipped cluster name (configs/clusters/NAME.json) or a path to a cluster file.
  std::string cluster = "dgx-h100";
  // The tokenizer's vocabulary, for arguments that name a tokenizer file instead of
  // --vocab-size.
  std::optional<std::int64_t> vocab;
};

struct MegatronImport {
  nlohmann::json config;                  // a run config: model inline, cluster by name or path
  std::vector<std::string> warnings;      // options not applied as given, shell not evaluated
  std::vector<std::string> layout_notes;  // what the loader adjusted (Layout::notes)
};

// `text` is the file's content, `source` its name for messages. Throws InputError naming the
// source, line, option and value for input Megatron or wallsim would refuse.
MegatronImport import_megatron_args(std::string_view text, const std::string& source,
                                    const MegatronImportOptions& options);

// The same from Megatron option words already in hand (another format translated to them):
// `format` names the format in the config's description, `warnings` come first.
MegatronImport import_megatron_words(const std::vector<ShellWord>& words, std::int64_t num_gpus,
                                     const std::string& source, const std::string& format,
                                     const MegatronImportOptions& options,
                                     std::vector<std::string> warnings);

// A run config path and the name a foreign format gives it ({"parallel.tp",
// "--tensor-model-parallel-size"}).
using SourceName = std::pair<const char*, const char*>;

// `message` (the run config loader's) with the first of `names` whose path it names as
// ": path " followed by " (its source name)", so an error speaks the user's format.
std::string with_source_names(std::string message, std::span<const SourceName> names);

// Reads `path` ("-" is standard input) and imports it. Throws InputError.
MegatronImport import_megatron_args_file(const std::string& path,
                                         const MegatronImportOptions& options);

}  // namespace wallsim::models
