#include "models/launch_args/torchtitan_import.hpp"

#include "models/launch_args/cluster_reference.hpp"
#include "models/launch_args/torchtitan_layout.hpp"
#include "models/launch_args/torchtitan_parallel.hpp"
#include "models/launch_args/torchtitan_toml.hpp"
#include "models/run_config.hpp"
#include "sim/core/data_path.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

using nlohmann::json;

std::string str(std::int64_t value) {
  return std::to_string(value);
}

struct ModelChoice {
  json reference;  // a data-root path, or the model inline where it differs from the shipped one
  TorchTitanModelShape shape;
};

// The shipped model of [model] name and flavor (TorchTitan's defaults: llama3, debugmodel).
ModelChoice read_model(TorchTitanToml& toml, std::vector<std::string>& warnings) {
  const std::string name = toml.string("model", "name").value_or("llama3");
  const std::string flavor = toml.string("model", "flavor").value_or("debugmodel");
  const TorchTitanFlavor* entry = find_torchtitan_flavor(name, flavor);
  if (entry == nullptr) {
    toml.fail("model", "flavor", name + " " + flavor,
              "wallsim ships no model of that shape; must be one of " + torchtitan_flavor_names());
  }
  const auto file = resolve_data_path(entry->model_file, "");
  if (!file) throw InputError(entry->model_file, "", "", "shipped model file not found");
  json model = load_json_file(*file);
  ModelChoice choice{entry->model_file,
                     {model.value("layers", std::int64_t{0}), model.contains("moe")}};
  if (model.value("mtp_layers", 0) > 0) {
    // TorchTitan's deepseek_v3 trains no multi-token-prediction module (its DeepSeekV3ModelArgs,
    // torchtitan/models/deepseek_v3/model/args.py, has no MTP field).
    warnings.push_back("model " + name + " " + flavor +
                       ": TorchTitan trains no multi-token-prediction layer; model.mtp_layers 0 "
                       "(the shipped " +
                       entry->model_file + " has " + str(model.value("mtp_layers", 0)) + ")");
    model["mtp_layers"] = 0;
    choice.reference = std::move(model);
  }
  return choice;
}

// model.converters: "float8" / "quantize.linear.float8" quantize the linears to FP8 with
// per-tensor (or row-wise) scales, "mx" / "quantize.linear.mx" to MXFP8.
std::string read_precision(TorchTitanToml& toml, bool moe, std::vector<std::string>& warnings) {
  const auto converters = toml.strings("model", "converters").value_or(std::vector<std::string>{});
  std::string precision = "bf16";
  bool grouped = false;
  for (const std::string& converter : converters) {
    if (converter == "float8" || converter == "quantize.linear.float8") {
      precision = "fp8";
    } else if (converter == "mx" || converter == "quantize.linear.mx") {
      precision = "mxfp8";
    } else if (converter.starts_with("quantize.grouped_mm.")) {
      grouped = true;
    } else {
      warnings.push_back("model.converters " + converter + " is not modelled");
    }
  }
  if (grouped && precision == "bf16") {
    warnings.push_back(
        "model.converters: quantized grouped GEMMs without quantized linears are not modelled: "
        "simulated in bf16");
  }
  if (moe && !grouped && precision != "bf16") {
    warnings.push_back("model.converters: wallsim's " + precision +
                       " also quantizes the expert GEMMs, which quantize.linear leaves in bf16");
  }
  const std::string section = toml.has_section("float8") ? "float8" : "quantize.linear.float8";
  const auto recipe = toml.string(section, "recipe_name");
  if (precision == "fp8" && recipe && *recipe != "tensorwise") {
    warnings.push_back(section + ".recipe_name " + *recipe +
                       ": simulated with per-tensor scaling (tensorwise)");
  }
  if (precision == "fp8" &&
      toml.boolean(section, "enable_fsdp_float8_all_gather").value_or(false)) {
    warnings.push_back(section +
                       ".enable_fsdp_float8_all_gather: FSDP's FP8 parameter all-gather is not "
                       "modelled: parameters are gathered in bf16");
  }
  return precision;
}

void read_dtypes(TorchTitanToml& toml, json& training, std::vector<std::string>& warnings) {
  const std::string param = toml.string("training", "mixed_precision_param").value_or("bfloat16");
  const std::string reduce = toml.string("training", "mixed_precision_reduce").value_or("float32");
  const std::string dtype = toml.string("training", "dtype").value_or("float32");
  if (param != "bfloat16" && param != "float32") {
    toml.fail("training", "mixed_precision_param", param, "must be bfloat16 or float32");
  }
  if (reduce != "bfloat16" && reduce != "float32") {
    toml.fail("training", "mixed_precision_reduce", reduce, "must be float32 or bfloat16");
  }
  if (dtype != "bfloat16" && dtype != "float32") {
    toml.fail("training", "dtype", dtype, "must be float32 or bfloat16");
  }
  if (param == "float32") {
    warnings.push_back(
        "training.mixed_precision_param float32: fp32 compute is not modelled: "
        "simulated in bf16");
  }
  if (dtype == "bfloat16") {
    warnings.push_back(
        "training.dtype bfloat16 (no fp32 master weights or optimizer state) is not modelled: "
        "simulated with fp32 master weights and Adam moments");
  }
  training["grad_reduce_dtype"] = reduce == "bfloat16" ? "bf16" : "fp32";
}

// TorchTitan's default is selective checkpointing of every second layer ("2").
void read_recompute(TorchTitanToml& toml, json& training, std::vector<std::string>& warnings) {
  const std::string mode = toml.string("activation_checkpoint", "mode").value_or("selective");
  const std::string option =
      toml.string("activation_checkpoint", "selective_ac_option").value_or("2");
  if (mode == "none" || mode == "full") {
    training["recompute"] = mode;
    return;
  }
  if (mode == "memory_budget") {
    warnings.push_back(
        "activation_checkpoint.mode memory_budget: what the compiler recomputes is not "
        "modelled: simulated without recompute");
    training["recompute"] = "none";
    return;
  }
  if (mode != "selective") {
    toml.fail("activation_checkpoint", "mode", mode,
              "must be one of none, selective, full, memory_budget");
  }
  if (option == "op") {
    training["recompute"] = "selective";
    warnings.push_back(
        "activation_checkpoint.selective_ac_option op (TorchTitan's per-op policy: keeps the "
        "attention outputs and every other matmul output, recomputes the rest) is not "
        "modelled: simulated as selective recompute of core_attn");
    return;
  }
  const bool integer = !option.empty() && option.size() < 8 &&
                       option.find_first_not_of("0123456789") == std::string::npos;
  if (!integer || std::stoll(option) < 1) {
    toml.fail("activation_checkpoint", "selective_ac_option", option,
              "must be op or a positive integer (checkpoint every n-th layer)");
  }
  training["recompute"] = "full";
  if (option != "1") {
    warnings.push_back("activation_checkpoint.selective_ac_option " + option +
                       " (full checkpointing of every " + option +
                       "-th layer) is not modelled: simulated as full recompute of every "
                       "layer (compute overestimated, activation memory underestimated)");
  }
}

bool read_compile(TorchTitanToml& toml, std::vector<std::string>& warnings) {
  const bool compile = toml.boolean("compile", "enable").value_or(false) ||
                       toml.boolean("training", "compile").value_or(false);
  if (compile) {
    warnings.push_back(
        "torch.compile ([compile] enable, training.compile in older configs): its kernel "
        "fusion is not modelled (wallsim times the eager kernels)");
  }
  return compile;
}

// local_batch_size per data-parallel rank and step of gradient accumulation; with PP it is cut
// into pipeline_parallel_microbatch_size micro-batches (torchtitan/train.py).
void read_batch(TorchTitanToml& toml, const TorchTitanDegrees& d, json& training,
                std::vector<std::string>& warnings) {
  // Train configs older than the rename to local_batch_size call it batch_size.
  std::string local_key = "local_batch_size";
  auto local_value = toml.integer("training", local_key);
  if (!local_value && (local_value = toml.integer("training", "batch_size"))) {
    local_key = "batch_size";
  }
  const std::int64_t local = local_value.value_or(8);
  const std::int64_t global = toml.integer("training", "global_batch_size").value_or(-1);
  const std::int64_t micro =
      toml.integer("parallelism", "pipeline_parallel_microbatch_size").value_or(1);
  const std::int64_t seq = toml.integer("training", "seq_len").value_or(2048);
  const std::int64_t limit = std::int64_t{1} << 24;
  if (local < 1 || local > limit)
    toml.fail("training", local_key, str(local), "must be from 1 to " + str(limit));
  if (seq < 1 || seq > limit)
    toml.fail("training", "seq_len", str(seq), "must be from 1 to " + str(limit));
  if (micro < 1 || micro > local) {
    toml.fail("parallelism", "pipeline_parallel_microbatch_size", str(micro),
              "must be from 1 to training." + local_key + " = " + str(local));
  }
  const std::int64_t step = local * d.dp();  // ≤ 2^44
  if (global != -1 && (global < 1 || global > limit * 64 || global % step != 0)) {
    toml.fail("training", "global_batch_size", str(global),
              "must be -1 or a multiple of " + local_key + " × data-parallel degree = " +
                  str(local) + " × " + str(d.dp()) + " = " + str(step));
  }
  const std::int64_t accumulation = global == -1 ? 1 : global / step;
  training["seq_len"] = seq;
  training["global_batch"] = global == -1 ? step : global;
  training["micro_batch"] = d.pp > 1 ? micro : local;
  if (d.pp > 1 && local % micro != 0) {
    toml.fail("parallelism", "pipeline_parallel_microbatch_size", str(micro),
              "must divide training." + local_key + " = " + str(local));
  }
  if (d.pp > 1 && accumulation > 1) {
    warnings.push_back(
        "training.global_batch_size: TorchTitan runs the pipeline schedule once per "
        "gradient-accumulation step (" +
        str(accumulation) +
        " per step); simulated as one schedule of all the step's micro-batches, "
        "without the other pipeline fills and drains");
  }
  if (d.pp == 1 && micro != 1) {
    warnings.push_back(
        "parallelism.pipeline_parallel_microbatch_size: no effect without "
        "pipeline parallelism");
  }
}

// The loader's JSON paths in a message, with the TorchTitan field each came from.
std::string with_field_names(std::string message) {
  static const SourceName kNames[] = {
      {"training.global_batch", "training.global_batch_size"},
      {"training.micro_batch", "training.local_batch_size / pipeline_parallel_microbatch_size"},
      {"training.precision", "model.converters"},
      {"training.schedule", "parallelism.pipeline_parallel_schedule"},
      {"parallel.tp", "parallelism.tensor_parallel_degree"},
      {"parallel.cp", "parallelism.context_parallel_degree"},
      {"parallel.ep", "parallelism.expert_parallel_degree"},
      {"parallel.etp", "parallelism.expert_tensor_parallel_degree"},
      {"parallel.pipeline_layout", "parallelism.pipeline_parallel_degree and stage split"},
      {"num_gpus", "the GPU count"},
  };
  return with_source_names(std::move(message), kNames);
}

}  // namespace

MegatronImport import_torchtitan_toml(std::string_view text, const std::string& source,
                                      const MegatronImportOptions& options) {
  require_utf8(text, source);
  TorchTitanToml toml(text, source);
  MegatronImport result;
  std::vector<std::string>& warnings = result.warnings;
  const ModelChoice model = read_model(toml, warnings);
  const TorchTitanDegrees degrees = read_torchtitan_degrees(toml, options.num_gpus);
  json config = {{"description", "Imported from the TorchTitan job config " + source},
                 {"model", model.reference},
                 {"cluster", cluster_reference(options.cluster)},
                 {"num_gpus", degrees.num_gpus}};
  json& training = config["training"];
  training["precision"] = read_precision(toml, model.shape.moe, warnings);
  read_batch(toml, degrees, training, warnings);
  read_dtypes(toml, training, warnings);
  read_recompute(toml, training, warnings);
  const bool compile = read_compile(toml, warnings);
  read_torchtitan_parallel(toml, degrees, model.shape, compile, config, warnings);
  if (toml.boolean("training", "enable_cpu_offload").value_or(false)) {
    warnings.push_back(
        "training.enable_cpu_offload: FSDP's CPU offload of parameters, gradients "
        "and optimizer state is not modelled: simulated on the GPU");
  }
  for (auto& line : toml.unread_report()) warnings.push_back(std::move(line));
  try {
    result.layout_notes = run_config_from_json(config, source).layout.notes;
  } catch (const InputError& e) {
    throw InputError(with_field_names(e.what()));
  }
  result.config = std::move(config);
  return result;
}

MegatronImport import_torchtitan_file(const std::string& path,
                                      const MegatronImportOptions& options) {
  return import_torchtitan_toml(read_data_file(path), path, options);
}

}  // namespace wallsim::models
