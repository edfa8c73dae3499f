#include "models/launch_args/torchtitan_toml.hpp"

#include <map>
#include <set>

#include <toml++/toml.h>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

// TorchTitan's fields of the sections wallsim reads (torchtitan/config/job_config.py at
// pytorch/torchtitan commit 038d5fd1bb3056e3c676d261fd720e1dfbc04bfe and later), with the names
// older train configs use (training.batch_size, training.compile, float8.moe_fqns).
const std::map<std::string, std::set<std::string>>& read_sections() {
  static const std::map<std::string, std::set<std::string>> sections = {
      {"model",
       {"name", "flavor", "hf_assets_path", "tokenizer_path", "converters",
        "print_after_conversion"}},
      {"training",
       {"dataset", "dataset_path", "local_batch_size", "global_batch_size", "batch_size", "seq_len",
        "max_norm", "steps", "enable_cpu_offload", "dtype", "mixed_precision_param",
        "mixed_precision_reduce", "compile", "gc_freq", "gc_debug", "seed", "deterministic",
        "dataloader"}},
      {"parallelism",
       {"data_parallel_replicate_degree",
        "data_parallel_shard_degree",
        "fsdp_reshard_after_forward",
        "tensor_parallel_degree",
        "disable_loss_parallel",
        "enable_async_tensor_parallel",
        "enable_compiled_autograd",
        "pipeline_parallel_degree",
        "module_fqns_per_model_part",
        "pipeline_parallel_split_points",
        "pipeline_parallel_first_stage_less_layers",
        "pipeline_parallel_last_stage_less_layers",
        "pipeline_parallel_layers_per_stage",
        "pipeline_parallel_schedule",
        "pipeline_parallel_schedule_csv",
        "pipeline_parallel_microbatch_size",
        "pipeline_parallel_expert_parallel_overlap",
        "context_parallel_degree",
        "context_parallel_load_balancer",
        "context_parallel_rotate_method",
        "expert_parallel_degree",
        "expert_tensor_parallel_degree",
        "expert_parallel_comm_backend"}},
      {"activation_checkpoint",
       {"mode", "selective_ac_option", "per_op_sac_force_recompute_mm_shapes_by_fqns", "early_stop",
        "memory_budget", "visualize_memory_budget_pareto", "preserve_rng_state",
        "determinism_check", "debug"}},
      {"compile", {"enable", "components", "backend"}},
      {"float8",
       {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp",
        "force_recompute_fp8_weight_in_bwd", "recipe_name", "filter_fqns", "emulate",
        "moe_fqns_prototype", "moe_fqns"}},
      {"quantize.linear.float8",
       {"enable_fsdp_float8_all_gather", "precompute_float8_dynamic_scale_for_fsdp", "recipe_name",
        "filter_fqns", "emulate"}},
      {"mx", {"mxfp8_dim1_cast_kernel_choice", "recipe_name", "filter_fqns"}},
      {"quantize.linear.mx", {"mxfp8_dim1_cast_kernel_choice", "recipe_name", "filter_fqns"}},
      {"quantize.grouped_mm.float8", {"fqns"}},
      {"quantize.grouped_mm.mx", {"recipe_name", "fqns"}},
  };
  return sections;
}

// TorchTitan's sections that matter for neither step time nor memory.
const std::set<std::string> kOtherSections = {
    "job",  "profiling",         "metrics",         "optimizer",    "lr_scheduler", "checkpoint",
    "comm", "memory_estimation", "fault_tolerance", "experimental", "validation",   "debug"};

bool is_set(const toml::node& node) {
  if (const auto* flag = node.as_boolean()) return flag->get();
  if (const auto* number = node.as_integer()) return number->get() != 0;
  if (const auto* number = node.as_floating_point()) return number->get() != 0.0;
  if (const auto* text = node.as_string()) return !text->get().empty();
  if (const auto* array = node.as_array()) return !array->empty();
  if (const auto* table = node.as_table()) return !table->empty();
  return true;
}

std::string text_of(const toml::node& node) {
  if (const auto* text = node.as_string()) return text->get();
  if (const auto* number = node.as_integer()) return std::to_string(number->get());
  if (const auto* flag = node.as_boolean()) return flag->get() ? "true" : "false";
  if (const auto* number = node.as_floating_point()) return std::to_string(number->get());
  if (node.is_array()) return "[…]";
  return "{…}";
}

std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    const auto first = item.find_first_not_of(' ');
    if (first != std::string::npos)
      items.push_back(item.substr(first, item.find_last_not_of(' ') - first + 1));
    start = comma + 1;
  }
  return items;
}

}  // namespace

struct TorchTitanToml::Impl {
  std::string source;
  toml::table root;
  std::set<std::string> read;

  const toml::table* table(const std::string& section) const {
    const toml::table* at = &root;
    for (const std::string& part : split_list_dots(section)) {
      at = at->get_as<toml::table>(part);
      if (at == nullptr) return nullptr;
    }
    return at;
  }

  static std::vector<std::string> split_list_dots(const std::string& section) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= section.size()) {
      const std::size_t dot = std::min(section.find('.', start), section.size());
      parts.push_back(section.substr(start, dot - start));
      start = dot + 1;
    }
    return parts;
  }

  const toml::node* node(const std::string& section, const std::string& key) const {
    const toml::table* at = table(section);
    return at == nullptr ? nullptr : at->get(key);
  }

  std::string where(const toml::node* at) const {
    if (at == nullptr) return source;
    const auto& begin = at->source().begin;
    return source + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column);
  }

  // Walks the tables below `path`: read sections list their fields, other known sections are
  // named once, anything else is unknown.
  void report(const toml::table& at, const std::string& path, std::vector<std::string>& lines,
              std::vector<std::string>& not_read, std::vector<std::string>& unknown) const {
    for (const auto& [key, child] : at) {
      const std::string name =
          path.empty() ? std::string(key.str()) : path + "." + std::string(key.str());
      const auto section = read_sections().find(name);
      if (section != read_sections().end() && child.is_table()) {
        report_fields(*child.as_table(), name, section->second, lines);
      } else if (path.empty() && kOtherSections.contains(name)) {
        if (is_set(child)) not_read.push_back(name);
      } else if (child.is_table() && is_prefix_of_section(name)) {
        report(*child.as_table(), name, lines, not_read, unknown);
      } else {
        unknown.push_back(name);
      }
    }
  }

  static bool is_prefix_of_section(const std::string& name) {
    for (const auto& [section, fields] : read_sections()) {
      if (section.starts_with(name + ".")) return true;
    }
    return false;
  }

  void report_fields(const toml::table& at, const std::string& section,
                     const std::set<std::string>& known, std::vector<std::string>& lines) const {
    std::vector<std::string> not_modelled;
    std::vector<std::string> unknown;
    for (const auto& [key, child] : at) {
      const std::string field(key.str());
      if (read.contains(section + "." + field)) continue;
      if (!known.contains(field)) {
        unknown.push_back(field);
      } else if (is_set(child)) {
        not_modelled.push_back(field);
      }
    }
    if (!not_modelled.empty()) {
      lines.push_back("[" + section +
                      "] fields wallsim does not model (not read): " + joined(not_modelled));
    }
    if (!unknown.empty()) {
      lines.push_back("[" + section +
                      "] fields TorchTitan does not define (ignored): " + joined(unknown));
    }
  }
};

TorchTitanToml::TorchTitanToml(std::string_view text, std::string source)
    : impl_(std::make_unique<Impl>()) {
  impl_->source = std::move(source);
  try {
    impl_->root = toml::parse(text, impl_->source);
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    throw InputError(
        impl_->source + ":" + std::to_string(begin.line) + ":" + std::to_string(begin.column), "",
        "", "not TOML: " + std::string(e.description()));
  }
}

TorchTitanToml::~TorchTitanToml() = default;

bool TorchTitanToml::has_section(const std::string& section) const {
  return impl_->table(section) != nullptr;
}

std::string TorchTitanToml::where(const std::string& section, const std::string& key) const {
  return impl_->where(impl_->node(section, key));
}

void TorchTitanToml::fail(const std::string& section, const std::string& key,
                          const std::string& value, const std::string& problem) const {
  throw InputError(where(section, key), key.empty() ? section : section + "." + key, value,
                   problem);
}

std::optional<std::int64_t> TorchTitanToml::integer(const std::string& section,
                                                    const std::string& key) {
  const toml::node* at = impl_->node(section, key);
  impl_->read.insert(section + "." + key);
  if (at == nullptr) return std::nullopt;
  if (const auto* number = at->as_integer()) return number->get();
  fail(section, key, text_of(*at), "must be an integer");
}

std::optional<bool> TorchTitanToml::boolean(const std::string& section, const std::string& key) {
  const toml::node* at = impl_->node(section, key);
  impl_->read.insert(section + "." + key);
  if (at == nullptr) return std::nullopt;
  if (const auto* flag = at->as_boolean()) return flag->get();
  fail(section, key, text_of(*at), "must be true or false");
}

std::optional<std::string> TorchTitanToml::string(const std::string& section,
                                                  const std::string& key) {
  const toml::node* at = impl_->node(section, key);
  impl_->read.insert(section + "." + key);
  if (at == nullptr) return std::nullopt;
  if (const auto* text = at->as_string()) return text->get();
  fail(section, key, text_of(*at), "must be a string");
}

std::optional<std::vector<std::string>> TorchTitanToml::strings(const std::string& section,
                                                                const std::string& key) {
  const toml::node* at = impl_->node(section, key);
  impl_->read.insert(section + "." + key);
  if (at == nullptr) return std::nullopt;
  if (const auto* text = at->as_string()) return split_list(text->get());
  std::vector<std::string> items;
  if (const auto* array = at->as_array()) {
    for (const toml::node& item : *array) {
      const auto* text = item.as_string();
      if (text == nullptr) fail(section, key, text_of(item), "must list strings");
      items.push_back(text->get());
    }
    return items;
  }
  fail(section, key, text_of(*at), "must be a list of strings");
}

std::optional<std::vector<std::vector<std::string>>> TorchTitanToml::string_lists(
    const std::string& section, const std::string& key) {
  const toml::node* at = impl_->node(section, key);
  impl_->read.insert(section + "." + key);
  if (at == nullptr) return std::nullopt;
  const auto* outer = at->as_array();
  if (outer == nullptr) fail(section, key, text_of(*at), "must be a list of lists of strings");
  std::vector<std::vector<std::string>> lists;
  for (const toml::node& part : *outer) {
    const auto* inner = part.as_array();
    if (inner == nullptr) fail(section, key, text_of(part), "must be a list of lists of strings");
    lists.emplace_back();
    for (const toml::node& item : *inner) {
      const auto* text = item.as_string();
      if (text == nullptr) fail(section, key, text_of(item), "must list strings");
      lists.back().push_back(text->get());
    }
  }
  return lists;
}

std::vector<std::string> TorchTitanToml::unread_report() const {
  std::vector<std::string> lines;
  std::vector<std::string> not_read;
  std::vector<std::string> unknown;
  impl_->report(impl_->root, "", lines, not_read, unknown);
  if (!not_read.empty()) {
    lines.push_back("sections not read (no effect on step time or memory): " + joined(not_read));
  }
  if (!unknown.empty()) {
    lines.push_back("sections or fields TorchTitan does not define (ignored): " + joined(unknown));
  }
  return lines;
}

}  // namespace wallsim::models
