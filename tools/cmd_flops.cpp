// `wallsim flops CONFIG [--json]`: FLOPs of one training iteration (models/flops.hpp).
#include <cstdio>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/flops.hpp"
#include "models/parameter_count.hpp"
#include "models/report_json.hpp"
#include "tools/command.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

// Megatron's parameter count, total and active (k of E routed experts per token).
void print_parameters(const models::RunConfig& config) {
  const std::int64_t tp = config.layout.sizes.tp;
  const double total = models::total_parameters(config.model, tp);
  const std::int64_t topk = config.model.is_moe() ? config.model.moe->topk : 0;
  const std::int64_t experts = config.model.is_moe() ? config.model.moe->experts : 0;
  std::printf("  parameters %.4g B total, %.4g B active per token (%lld of %lld routed experts)\n",
              total / 1e9, models::active_parameters(config.model, tp) / 1e9,
              static_cast<long long>(topk), static_cast<long long>(experts));
}

void print_table(const models::RunConfig& config, const models::IterationFlops& f) {
  const auto& t = config.training;
  std::printf("%s: %lld sequences x %lld tokens = %.0f tokens per iteration on %lld GPUs\n",
              config.model.name.c_str(), static_cast<long long>(t.global_batch),
              static_cast<long long>(t.seq_len), f.tokens, static_cast<long long>(config.num_gpus));
  std::printf("  %-36s %14.6e   Megatron's num_floating_point_operations\n",
              "model FLOPs per iteration", f.model_per_iteration);
  std::printf("  %-36s %14.6e   + recompute (%s): %.6e\n", "hardware FLOPs per iteration",
              f.hardware_per_iteration, models::to_string(t.recompute), f.recompute_per_iteration);
  std::printf("  %-36s %14.6e\n", "model FLOPs per token", f.model_per_token);
  std::printf("  %-36s %14.6e\n", "hardware FLOPs per token", f.hardware_per_token);
  std::printf("  %-36s %14.6e\n", "model FLOPs per GPU per iteration", f.model_per_gpu);
  std::printf("  %-36s %14.6e\n", "hardware FLOPs per GPU per iteration", f.hardware_per_gpu);
  std::printf("  breakdown: attention linear %.3e, core attention %.3e, MLP %.3e, logits %.3e\n",
              f.model.attention_linear, f.model.attention_core, f.model.mlp, f.model.logits);
  if (config.model.is_moe() || config.model.mtp_layers > 0) {
    std::printf("  of the MLP: routed experts %.3e; MTP norms and projections %.3e\n",
                f.model.routed_experts, f.model.mtp_projection);
    print_parameters(config);
  }
}

int run(const ConfigCommandOptions& options) {
  const models::RunConfig config = load_config(options);
  const models::IterationFlops flops = models::iteration_flops(
      config.model, config.training, config.layout.sizes.tp, config.num_gpus);
  log_notes(config.layout.notes);
  if (options.json) {
    std::cout << models::flops_json(flops, config.layout.notes).dump(2) << "\n";
  } else {
    print_table(config, flops);
  }
  return 0;
}

}  // namespace

void add_flops_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<ConfigCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "flops",
      "FLOPs of one training iteration (model = Megatron's count; hardware adds recompute)");
  add_config_options(*sub, *options);
  add_megatron_args_option(*sub, *options);
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
