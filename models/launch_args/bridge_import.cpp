#include "models/launch_args/bridge_import.hpp"

#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include "models/launch_args/bridge_fields.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

using Section = std::map<std::string, YAML::Node>;
using Sections = std::map<std::string, Section>;

// The sections read field by field; the others matter for neither step time nor memory
// (checkpoint, logger, rng, scheduler, …) or are read in part (dataset, tokenizer, dist,
// comm_overlap).
const char* const kListedSections[] = {"model", "train", "ddp", "optimizer"};

int line_of(const YAML::Node& node) {
  return node ? node.Mark().line + 1 : 0;
}

std::string scalar(const YAML::Node& node) {
  return node && node.IsScalar() ? node.Scalar() : "";
}

bool is_true(const YAML::Node& node) {
  return node && node.IsScalar() && (node.Scalar() == "true" || node.Scalar() == "True");
}

// Null, false, 0 and empty count as off: such a field is not reported when it is not read.
bool is_set(const YAML::Node& node) {
  if (!node || node.IsNull()) return false;
  if (node.IsScalar()) {
    const std::string& text = node.Scalar();
    return !(text.empty() || text == "false" || text == "False" || text == "0" || text == "0.0");
  }
  return node.size() > 0;
}

// Replaces a field's value. yaml-cpp's Node assignment rebinds the node it is assigned to, which
// the document shares; erase and emplace only copy the handle.
void set_field(Section& section, const std::string& key, const YAML::Node& value) {
  section.erase(key);
  section.emplace(key, value);
}

Section section(const YAML::Node& root, const char* name) {
  Section out;
  const YAML::Node node = root[name];
  if (!node || !node.IsMap()) return out;
  for (const auto& entry : node) out[entry.first.Scalar()] = entry.second;
  return out;
}

// Bridge's MixedPrecisionConfig.setup: each of its fields overrides the same-named field of the
// model, DDP and optimizer configs.
void apply_mixed_precision(const YAML::Node& root, Sections& sections, const std::string& source) {
  const YAML::Node node = root["mixed_precision"];
  if (!node || node.IsNull()) return;
  Section overrides;
  if (node.IsScalar()) {
    const auto recipe = bridge_precision_recipe(node.Scalar());
    if (!recipe) {
      throw InputError(source + ":" + std::to_string(line_of(node)), "mixed_precision",
                       node.Scalar(), "must be one of " + bridge_precision_recipe_names());
    }
    for (const auto& [key, text] : recipe->fields) overrides[key] = YAML::Load(text);
  } else if (node.IsMap()) {
    overrides = section(root, "mixed_precision");
  }
  for (const auto& [key, value] : overrides) {
    for (const char* target : {"model", "ddp", "optimizer"}) {
      if (sections[target].contains(key)) set_field(sections[target], key, value);
    }
  }
}

class Translator {
 public:
  Translator(Sections sections, std::string source)
      : sections_(std::move(sections)), source_(std::move(source)) {
    for (const BridgeField& field : bridge_fields()) {
      names_.emplace(field.flag, std::string(field.section) + "." + field.key);
    }
  }

  std::vector<ShellWord> words() {
    const Section& model = sections_["model"];
    moe_ = is_set(get(model, "num_moe_experts"));
    mla_ = is_true(get(model, "multi_latent_attention"));
    fp8_ = is_set(get(model, "fp8"));
    ce_fusion_ = is_true(get(model, "cross_entropy_loss_fusion"));
    for (const BridgeField& field : bridge_fields()) emit_field(field);
    return std::move(words_);
  }

  std::vector<std::string> notes() const { return notes_; }
  const std::map<std::string, std::string>& names() const { return names_; }

  // Fields set and not read, per listed section.
  std::vector<std::string> unread() const {
    std::vector<std::string> report;
    for (const char* name : kListedSections) {
      std::string keys;
      const auto it = sections_.find(name);
      if (it == sections_.end()) continue;
      for (const auto& [key, value] : it->second) {
        if (key == "_target_" || read_.contains(std::string(name) + "." + key)) continue;
        if (is_set(value)) keys += (keys.empty() ? "" : ", ") + key;
      }
      if (!keys.empty()) {
        report.push_back(std::string(name) + " fields set but not read by wallsim: " + keys);
      }
    }
    return report;
  }

 private:
  static YAML::Node get(const Section& section, const std::string& key) {
    const auto it = section.find(key);
    return it == section.end() ? YAML::Node() : it->second;
  }

  bool open(BridgeField::Gate gate) const {
    switch (gate) {
      case BridgeField::Gate::kMoe:
        return moe_;
      case BridgeField::Gate::kMla:
        return mla_;
      case BridgeField::Gate::kFp8:
        return fp8_;
      case BridgeField::Gate::kCrossEntropyFusion:
        return ce_fusion_;
      case BridgeField::Gate::kAlways:
        break;
    }
    return true;
  }

  void add(const BridgeField& field, const YAML::Node& node, std::vector<std::string> values) {
    const std::string path = std::string(field.section) + "." + field.key;
    if (emitted_.contains(field.flag)) return;  // ddp and optimizer both name the optimizer
    emitted_.insert(field.flag);
    names_[field.flag] = path;
    const int line = node ? line_of(node) : 0;
    words_.push_back(ShellWord{field.flag, {}, line});
    for (auto& value : values) words_.push_back(ShellWord{std::move(value), {}, line});
  }

  void emit_field(const BridgeField& field) {
    const Section& section = sections_[field.section];
    const YAML::Node node = get(section, field.key);
    read_.insert(std::string(field.section) + "." + field.key);
    if (!node || node.IsNull() || !open(field.gate)) return;
    using K = BridgeField::Kind;
    switch (field.kind) {
      case K::kValue:
        if (!node.IsScalar()) return fail(field, node, "must be a single value");
        return add(field, node, {node.Scalar()});
      case K::kSwitch:
        return is_true(node) ? add(field, node, {}) : void();
      case K::kOffSwitch:
        return scalar(node) == "false" ? add(field, node, {}) : void();
      case K::kNonDefault:
        return scalar(node) != field.fallback ? add(field, node, {scalar(node)}) : void();
      case K::kList:
        return add(field, node, list(field, node));
      case K::kCustom:
        return custom(field, node);
    }
  }

  std::vector<std::string> list(const BridgeField& field, const YAML::Node& node) {
    if (node.IsScalar()) return {node.Scalar()};
    std::vector<std::string> values;
    for (const auto& item : node) {
      if (!item.IsScalar()) fail(field, item, "must list single values");
      values.push_back(item.Scalar());
    }
    return values;
  }

  [[noreturn]] void fail(const BridgeField& field, const YAML::Node& node,
                         const std::string& problem) const {
    throw InputError(source_ + ":" + std::to_string(line_of(node)),
                     std::string(field.section) + "." + field.key, "", problem);
  }

  void custom(const BridgeField& field, const YAML::Node& node);
  void optimizer_dtype(const BridgeField& field, const YAML::Node& node);
  void activation(const YAML::Node& gated_node, const YAML::Node& function);

  Sections sections_;
  std::string source_;
  std::vector<ShellWord> words_;
  std::vector<std::string> notes_;
  std::map<std::string, std::string> names_;  // Megatron option → Bridge field
  std::set<std::string> emitted_;
  std::set<std::string> read_;
  bool moe_ = false;
  bool mla_ = false;
  bool fp8_ = false;
  bool ce_fusion_ = false;
};

void Translator::custom(const BridgeField& field, const YAML::Node& node) {
  const std::string key = field.key;
  const Section& model = sections_["model"];
  using K = BridgeField::Kind;
  if (key == "num_query_groups") {
    if (scalar(node) == scalar(get(model, "num_attention_heads"))) return;  // no GQA
    add({"model", "num_query_groups", "--group-query-attention", K::kSwitch}, node, {});
    return add(field, node, {scalar(node)});
  }
  if (key == "vocab_size") return add(field, node, {scalar(node)});
  if (key == "seq_length") return add(field, node, {scalar(node)});
  if (key == "moe_layer_freq") {
    if (node.IsScalar()) return add(field, node, {node.Scalar()});
    std::string text;
    for (const std::string& item : list(field, node)) text += (text.empty() ? "" : ",") + item;
    return add(field, node, {"[" + text + "]"});
  }
  if (key == "attention_backend") {
    std::string name = scalar(node);
    if (name.starts_with("AttnBackend.")) name = name.substr(12);
    if (name.empty()) return notes_.push_back("model.attention_backend is not read (not a name)");
    return add(field, node, {name});
  }
  if (key == "gated_linear_unit") activation(node, get(model, "activation_func"));
  if (key.ends_with("_dtype")) optimizer_dtype(field, node);
}

// optimizer.main_grads_dtype, main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype: a torch dtype
// ({_target_: torch.bfloat16}), torch.uint8 standing for fp8 as in Megatron's dtype map. fp32 is
// Megatron's default and adds no option.
void Translator::optimizer_dtype(const BridgeField& field, const YAML::Node& node) {
  std::string name = node.IsMap() ? scalar(node["_target_"]) : scalar(node);
  name = name.substr(name.find_last_of('.') + 1);
  static const std::map<std::string, std::string> kDtypes = {
      {"float32", "fp32"}, {"bfloat16", "bf16"}, {"float16", "fp16"}, {"uint8", "fp8"},
      {"fp32", "fp32"},    {"bf16", "bf16"},     {"fp16", "fp16"},    {"fp8", "fp8"}};
  const auto it = kDtypes.find(name);
  if (it == kDtypes.end()) {
    fail(field, node, "must be a torch dtype: float32, bfloat16, float16 or uint8 (fp8)");
  }
  if (it->second != "fp32") add(field, node, {it->second});
}

// gated_linear_unit with activation_func silu is SwiGLU; squared_relu ungated is squared ReLU;
// gelu ungated is GeLU.
void Translator::activation(const YAML::Node& gated_node, const YAML::Node& function) {
  const bool gated = is_true(gated_node);
  std::string name = function && function.IsMap() ? scalar(function["_target_"]) : scalar(function);
  name = name.substr(name.find_last_of('.') + 1);
  const BridgeField swiglu{"model", "gated_linear_unit", "--swiglu", BridgeField::Kind::kSwitch};
  const BridgeField squared{"model", "activation_func", "--squared-relu",
                            BridgeField::Kind::kSwitch};
  if (gated && (name == "silu" || name == "swish")) return add(swiglu, gated_node, {});
  if (!gated && name == "squared_relu") return add(squared, function, {});
  if (!gated && (name == "gelu" || name.empty())) return;
  notes_.push_back("model.activation_func " + name + (gated ? " (gated)" : "") +
                   " is not modelled: simulated as " + (gated ? "SwiGLU" : "GeLU"));
  if (gated) add(swiglu, gated_node, {});
}

// Megatron option names in a message → the Bridge fields they came from.
std::string bridge_names(std::string text, const std::map<std::string, std::string>& names) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, 2, "--") == 0) {
      std::size_t end = i + 2;
      while (end < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '-')) {
        ++end;
      }
      const auto it = names.find(text.substr(i, end - i));
      if (it != names.end()) {
        out += it->second;
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

Sections read_sections(const YAML::Node& root, const std::string& source) {
  Sections sections;
  for (const char* name : {"model", "train", "ddp", "optimizer", "dist", "comm_overlap"}) {
    sections[name] = section(root, name);
  }
  if (sections["model"].empty()) {
    throw InputError(source, "model", "", "missing: a Megatron-Bridge ConfigContainer has one");
  }
  apply_mixed_precision(root, sections, source);
  // The sequence length is the data's; the tokenizer's vocabulary when the model has none.
  Section& model = sections["model"];
  const YAML::Node dataset = root["dataset"];
  for (const char* key : {"seq_length", "sequence_length"}) {
    if (dataset && dataset.IsMap() && dataset[key] && !dataset[key].IsNull()) {
      set_field(model, "seq_length", dataset[key]);
    }
  }
  const YAML::Node tokenizer = root["tokenizer"];
  if ((!model.contains("vocab_size") || model["vocab_size"].IsNull()) && tokenizer &&
      tokenizer.IsMap() && tokenizer["vocab_size"]) {
    set_field(model, "vocab_size", tokenizer["vocab_size"]);
  }
  return sections;
}

std::string not_read_sections(const YAML::Node& root) {
  static const std::set<std::string> kRead = {
      "_target_", "model",        "train",   "ddp",       "optimizer",
      "dist",     "comm_overlap", "dataset", "tokenizer", "mixed_precision"};
  std::string names;
  for (const auto& entry : root) {
    if (!kRead.contains(entry.first.Scalar()) && is_set(entry.second)) {
      names += (names.empty() ? "" : ", ") + entry.first.Scalar();
    }
  }
  return names;
}

MegatronImport import_bridge(std::string_view text, const std::string& source,
                             const MegatronImportOptions& options);

}  // namespace

MegatronImport import_bridge_yaml(std::string_view text, const std::string& source,
                                  const MegatronImportOptions& options) {
  require_utf8(text, source);
  try {
    return import_bridge(text, source, options);
  } catch (const YAML::Exception& e) {  // a node of an unexpected shape
    throw InputError(source + ":" + std::to_string(e.mark.line + 1), "", "",
                     "unexpected YAML: " + e.msg);
  }
}

namespace {

MegatronImport import_bridge(std::string_view text, const std::string& source,
                             const MegatronImportOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(source + ":" + std::to_string(e.mark.line + 1), "", "", "not YAML: " + e.msg);
  }
  if (!root.IsMap()) throw InputError(source, "", "", "must be a YAML mapping (a ConfigContainer)");
  if (!options.num_gpus) {
    throw InputError(source, "", "",
                     "a Megatron-Bridge config does not hold the GPU count: give wallsim import "
                     "--num-gpus N");
  }
  const YAML::Node model_node = root["model"];
  const std::string model_seq =
      model_node && model_node.IsMap() ? scalar(model_node["seq_length"]) : "";
  Translator translator(read_sections(root, source), source);
  const std::vector<ShellWord> words = translator.words();
  std::vector<std::string> warnings = translator.notes();
  for (std::size_t i = 0; i + 1 < words.size() && !model_seq.empty(); ++i) {
    if (words[i].text == "--seq-length" && words[i + 1].text != model_seq) {
      warnings.push_back("the dataset's sequence length " + words[i + 1].text +
                         " is simulated; model.seq_length is " + model_seq);
    }
  }
  for (auto& line : translator.unread()) warnings.push_back(std::move(line));
  if (const std::string sections = not_read_sections(root); !sections.empty()) {
    warnings.push_back("sections not read (no effect on step time or memory): " + sections);
  }
  try {
    MegatronImport result = import_megatron_words(words, *options.num_gpus, source,
                                                  "Megatron-Bridge config", options, warnings);
    for (auto& warning : result.warnings) warning = bridge_names(warning, translator.names());
    return result;
  } catch (const InputError& e) {
    throw InputError(bridge_names(e.what(), translator.names()));
  }
}

}  // namespace

MegatronImport import_bridge_file(const std::string& path, const MegatronImportOptions& options) {
  return import_bridge_yaml(read_data_file(path), path, options);
}

}  // namespace wallsim::models
