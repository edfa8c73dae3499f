#include "models/launch_args/torchtitan_layout.hpp"

#include <algorithm>
#include <cctype>

#include "models/layout.hpp"

namespace wallsim::models {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

// The flavours of torchtitan/models/{llama3,deepseek_v3,qwen3}/__init__.py whose shapes the
// shipped models reproduce (configs/models/README.md names each model's source).
const std::vector<TorchTitanFlavor>& torchtitan_flavors() {
  static const std::vector<TorchTitanFlavor> flavors = {
      {"llama3", "8B", "configs/models/llama3-8b.json", "Llama 3 8B"},
      {"llama3", "70B", "configs/models/llama3-70b.json", "Llama 3 70B"},
      {"llama3", "405B", "configs/models/llama3-405b.json", "Llama 3.1 405B"},
      {"deepseek_v3", "671B", "configs/models/deepseek-v3.json", "DeepSeek-V3"},
      {"qwen3", "30B-A3B", "configs/models/qwen3-30b-a3b.json", "Qwen3 30B-A3B"},
      {"qwen3", "235B-A22B", "configs/models/qwen3-235b-a22b.json", "Qwen3 235B-A22B"},
  };
  return flavors;
}

const TorchTitanFlavor* find_torchtitan_flavor(const std::string& name, const std::string& flavor) {
  for (const auto& entry : torchtitan_flavors()) {
    if (name == entry.name && flavor == entry.flavor) return &entry;
  }
  return nullptr;
}

const TorchTitanFlavor* find_torchtitan_flavor_of_model(const std::string& model_name) {
  for (const auto& entry : torchtitan_flavors()) {
    if (model_name == entry.model_name) return &entry;
  }
  return nullptr;
}

std::string torchtitan_flavor_names() {
  std::string names;
  for (const auto& entry : torchtitan_flavors()) {
    names += (names.empty() ? "" : ", ") + std::string(entry.name) + " " + entry.flavor;
  }
  return names;
}

// torch.distributed.pipelining.schedules: the single-stage schedules (PipelineScheduleSingle) and
// the multi-stage ones. Interleaved zero bubble with one stage per rank is ZB-H1 (Qi et al.
// 2024); ZBVZeroBubble and DualPipeV place two stages per rank in a V, as zbv and dualpipev do
// (TorchTitan's "v" stage style); the breadth-first one has no wallsim schedule.
const std::vector<TorchTitanSchedule>& torchtitan_schedules() {
  static const std::vector<TorchTitanSchedule> schedules = {
      {"1F1B", false, "1f1b", nullptr},
      {"Interleaved1F1B", true, "interleaved", nullptr},
      {"GPipe", false, "1f1b",
       "GPipe runs every micro-batch's forward before any backward, so each stage holds the "
       "activations of all its micro-batches; simulated as 1F1B (the same bubble, activations of "
       "at most pp micro-batches): memory is underestimated"},
      {"InterleavedZeroBubble", true, "zb_h1", nullptr},
      {"LoopedBFS", true, nullptr, nullptr},
      {"ZBVZeroBubble", true, "zbv", nullptr},
      {"DualPipeV", true, "dualpipev", nullptr},
  };
  return schedules;
}

// get_schedule_class compares names case-insensitively.
const TorchTitanSchedule* find_torchtitan_schedule(const std::string& name) {
  for (const auto& entry : torchtitan_schedules()) {
    if (lower(name) == lower(entry.name)) return &entry;
  }
  return nullptr;
}

std::optional<std::vector<std::int64_t>> torchtitan_stage_layers(std::int64_t stages,
                                                                 std::int64_t layers,
                                                                 std::int64_t input_weight,
                                                                 std::int64_t output_weight) {
  if (stages < 1 || layers < 1) return std::nullopt;
  if (stages == 1) return std::vector<std::int64_t>{layers};
  const std::int64_t effective = layers + input_weight + output_weight;
  const std::int64_t share = effective / stages;
  const std::int64_t extra = effective % stages;
  if (share < 1 || input_weight > share || output_weight > share || input_weight < 0 ||
      output_weight < 0) {
    return std::nullopt;
  }
  std::vector<std::int64_t> split;
  for (std::int64_t stage = 0; stage < stages; ++stage) {
    std::int64_t count = share + (stage < extra ? 1 : 0);
    if (stage == 0) count -= input_weight;
    if (stage == stages - 1) count -= output_weight;
    split.push_back(count);
  }
  return split;
}

std::string layout_of_stages(const std::vector<std::int64_t>& layers_per_stage) {
  std::string text;
  for (std::size_t stage = 0; stage < layers_per_stage.size(); ++stage) {
    if (stage > 0) text += "|";
    if (stage == 0) text += "E";
    const std::int64_t count = layers_per_stage[stage];
    if (count == 1) text += "t";
    if (count > 1) text += "t*" + std::to_string(count);
    if (stage + 1 == layers_per_stage.size()) text += "L";
  }
  return text;
}

std::vector<std::vector<std::string>> fqns_of_stages(const std::vector<std::int64_t>& layers) {
  std::vector<std::vector<std::string>> parts;
  std::int64_t next = 0;
  for (std::size_t stage = 0; stage < layers.size(); ++stage) {
    std::vector<std::string> part;
    if (stage == 0) part.emplace_back("tok_embeddings");
    for (std::int64_t i = 0; i < layers[stage]; ++i) {
      part.push_back("layers." + std::to_string(next++));
    }
    if (stage + 1 == layers.size()) {
      part.emplace_back("norm");
      part.emplace_back("output");
    }
    parts.push_back(std::move(part));
  }
  return parts;
}

std::vector<std::int64_t> layers_per_virtual_stage(const Layout& layout) {
  std::vector<std::int64_t> layers;
  for (std::int64_t v = 0; v < layout.virtual_stages.count(); ++v) {
    const StageChunk at = layout.virtual_stages.place(v);
    layers.push_back(layout.placement.stages[static_cast<std::size_t>(at.stage)]
                         .chunks[static_cast<std::size_t>(at.chunk)]
                         .count);
  }
  return layers;
}

}  // namespace wallsim::models
