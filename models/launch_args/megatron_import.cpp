#include "models/launch_args/megatron_import.hpp"

#include <filesystem>
#include <iostream>
#include <iterator>

#include "models/launch_args/cluster_reference.hpp"
#include "models/launch_args/megatron_args.hpp"
#include "models/launch_args/megatron_model_import.hpp"
#include "models/launch_args/megatron_training_import.hpp"
#include "models/launch_args/shell_command.hpp"
#include "models/run_config.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

using nlohmann::json;

// torchrun's --nproc_per_node / --nproc-per-node and --nnodes (either spelling, "=" or not).
std::optional<std::int64_t> launcher_option(const std::vector<ShellWord>& launcher,
                                            const std::string& name, const std::string& source) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  for (std::size_t i = 0; i < launcher.size(); ++i) {
    const std::string& word = launcher[i].text;
    std::optional<ShellWord> value;
    for (const std::string& spelling : {"--" + name, "--" + dashed}) {
      if (word == spelling && i + 1 < launcher.size()) value = launcher[i + 1];
      if (word.starts_with(spelling + "=")) {
        value =
            ShellWord{word.substr(spelling.size() + 1), launcher[i].unresolved, launcher[i].line};
      }
    }
    if (!value) continue;
    const std::string where = source + ":" + std::to_string(value->line);
    if (!value->unresolved.empty()) {
      throw InputError(where, "--" + name, value->text,
                       "the launcher's GPU count needs " + value->unresolved.front() +
                           ", which the file does not set; give wallsim import --num-gpus N");
    }
    try {
      std::size_t used = 0;
      const std::int64_t count = std::stoll(value->text, &used);
      if (used == value->text.size() && count >= 1 && count <= MegatronArgs::kMaxParallel) {
        return count;
      }
    } catch (const std::exception&) {
    }
    throw InputError(where, "--" + name, value->text,
                     "must be an integer from 1 to " + std::to_string(MegatronArgs::kMaxParallel) +
                         " (elastic ranges are not read); give wallsim import --num-gpus N");
  }
  return std::nullopt;
}

std::int64_t gpu_count(const LaunchCommand& launch, const MegatronImportOptions& options,
                       const std::string& source) {
  if (options.num_gpus) {
    if (*options.num_gpus < 1 || *options.num_gpus > MegatronArgs::kMaxParallel) {
      throw InputError("command line", "--num-gpus", std::to_string(*options.num_gpus),
                       "must be from 1 to " + std::to_string(MegatronArgs::kMaxParallel));
    }
    return *options.num_gpus;
  }
  const auto per_node = launcher_option(launch.launcher, "nproc_per_node", source);
  const auto nodes = launcher_option(launch.launcher, "nnodes", source);
  if (per_node) return *per_node * nodes.value_or(1);
  throw InputError(source, "", "",
                   "the number of GPUs is not in the arguments (no torchrun --nproc_per_node): "
                   "give wallsim import --num-gpus N");
}

// The loader's JSON paths, with the Megatron option each came from.
std::string with_flag_names(std::string message) {
  static const SourceName kNames[] = {
      {"training.global_batch", "--global-batch-size"},
      {"training.seq_len", "--seq-length"},
      {"parallel.tp", "--tensor-model-parallel-size"},
      {"parallel.cp", "--context-parallel-size"},
      {"parallel.ep", "--expert-model-parallel-size"},
      {"parallel.etp", "--expert-tensor-parallel-size"},
      {"parallel.vpp", "--num-layers-per-virtual-pipeline-stage"},
      {"parallel.pipeline_layout", "--pipeline-model-parallel-layout"},
      {"parallel.hierarchical_cp", "--hierarchical-context-parallel-sizes"},
      {"num_gpus", "the GPU count"},
  };
  return with_source_names(std::move(message), kNames);
}

}  // namespace

std::string with_source_names(std::string message, std::span<const SourceName> names) {
  for (const auto& [path, name] : names) {
    const std::string key = std::string(": ") + path + " ";
    if (const auto at = message.find(key); at != std::string::npos) {
      message.insert(at + key.size() - 1, std::string(" (") + name + ")");
      break;
    }
  }
  return message;
}

MegatronImport import_megatron_words(const std::vector<ShellWord>& words, std::int64_t num_gpus,
                                     const std::string& source, const std::string& format,
                                     const MegatronImportOptions& options,
                                     std::vector<std::string> warnings) {
  MegatronArgs args(words, source);
  MegatronImport result;
  result.warnings = std::move(warnings);
  json model = megatron_model_json(args, options.vocab, result.warnings);
  model["name"] = std::filesystem::path(source).stem().string();
  model["source"] = format + " in " + source;
  json config = {{"description", "Imported from the " + format + " in " + source},
                 {"model", model},
                 {"cluster", cluster_reference(options.cluster)},
                 {"num_gpus", num_gpus}};
  read_megatron_layout(args, num_gpus, config, result.warnings);
  for (auto& line : args.unread_report()) result.warnings.push_back(std::move(line));
  try {
    const RunConfig loaded = run_config_from_json(config, source);
    result.layout_notes = loaded.layout.notes;
  } catch (const InputError& e) {
    throw InputError(with_flag_names(e.what()));
  }
  result.config = std::move(config);
  return result;
}

MegatronImport import_megatron_args(std::string_view text, const std::string& source,
                                    const MegatronImportOptions& options) {
  require_utf8(text, source);
  const LaunchCommand launch = read_launch_command(text, source);
  const std::int64_t num_gpus = gpu_count(launch, options, source);
  return import_megatron_words(launch.arguments, num_gpus, source, "Megatron-LM arguments", options,
                               launch.notes);
}

MegatronImport import_megatron_args_file(const std::string& path,
                                         const MegatronImportOptions& options) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return import_megatron_args(text, "<stdin>", options);
  }
  return import_megatron_args(read_data_file(path), path, options);
}

}  // namespace wallsim::models
