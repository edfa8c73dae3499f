// `wallsim export megatron`: the Megatron-LM arguments that launch the layout a run config
// simulates: model shape, MoE, MLA and MTP, parallelism, batch, precision, recompute, the
// distributed optimizer, overlap and kernel choices. The inverse of import_megatron_args on every
// option it reads (tests/unit/import checks the round trip on the shipped examples).
//
// Data, tokenizer, optimizer hyper-parameters and checkpointing are the user's; the vocabulary
// is given as --vocab-size (the model's unpadded vocabulary). What a run config holds that
// Megatron-LM cannot express (zero-bubble schedules, an order other than tp-cp-ep-dp-pp or
// tp-cp-ep-pp-dp, cp_load_balance false, router imbalance, DeepSpeed-style EP groups, flash3 as
// such) is named in `notes`.
#pragma once

#include <string>
#include <vector>

namespace wallsim::models {

struct RunConfig;

struct MegatronOption {
  std::string flag;                 // "--num-layers"
  std::vector<std::string> values;  // none for a switch
};

struct MegatronExport {
  std::vector<MegatronOption> options;
  std::vector<std::string> notes;
};

MegatronExport export_megatron_args(const RunConfig& config);

// Why Megatron-LM cannot run `config` as written (a pipeline schedule it does not have), or "".
// export_megatron_args still writes the layout's options, with this as a note.
std::string megatron_unsupported(const RunConfig& config);

// The torchrun words that start the job on the config's GPUs: --nproc_per_node (the cluster's
// GPUs per node, or num_gpus when the job is smaller than a node or does not fill whole nodes)
// and --nnodes, then "pretrain_gpt.py". `import megatron` reads the GPU count back from them.
std::vector<std::string> torchrun_words(const RunConfig& config);

// The options as shell words, quoted where the shell would split or expand them: one option
// per line ending in " \" (for a launch script), or all on one line; `prefix` (e.g.
// torchrun_words) goes first, on a line of its own when one_per_line.
std::string format_megatron_args(const std::vector<MegatronOption>& options, bool one_per_line,
                                 const std::vector<std::string>& prefix = {});

}  // namespace wallsim::models
