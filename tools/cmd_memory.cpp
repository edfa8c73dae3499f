// `wallsim memory CONFIG [--json]`: memory per pipeline stage, analytically (models/memory.hpp).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "models/memory.hpp"
#include "models/report_json.hpp"
#include "sim/core/byte_size.hpp"
#include "tools/command.hpp"
#include "tools/run_config_loading.hpp"

namespace wallsim::cli {
namespace {

std::string layer_ranges(const models::StageLayers& layers) {
  std::string text;
  for (const auto& chunk : layers.chunks) {
    if (!text.empty()) text += ",";
    text += chunk.count == 0 ? "-"
                             : std::to_string(chunk.first_layer) + "-" +
                                   std::to_string(chunk.first_layer + chunk.count - 1);
  }
  return text;
}

// ZeRO-2/3 runs get a column for the transient unit buffers.
void print_stage(const models::StageMemory& s, int layers_width, bool unit_buffers) {
  std::printf("  %5lld  %-*s %11s %11s %11s %11s", static_cast<long long>(s.stage), layers_width,
              layer_ranges(s.layers).c_str(), format_bytes(s.weights).c_str(),
              format_bytes(s.grads).c_str(), format_bytes(s.optimizer).c_str(),
              format_bytes(s.activations).c_str());
  if (unit_buffers) std::printf(" %12s", format_bytes(s.unit_buffers).c_str());
  std::printf(" %11s %11s %11s\n", format_bytes(s.allocated).c_str(),
              format_bytes(s.reserved).c_str(), format_bytes(s.peak).c_str());
}

void print_table(const models::RunConfig& config, const models::MemoryReport& m) {
  const auto& sizes = config.layout.sizes;
  std::printf(
      "%s on %lld GPUs: tp %lld, cp %lld, pp %lld (vpp %lld), dp %lld, %lld micro-batches\n",
      config.model.name.c_str(), static_cast<long long>(config.num_gpus),
      static_cast<long long>(sizes.tp), static_cast<long long>(sizes.cp),
      static_cast<long long>(sizes.pp), static_cast<long long>(config.layout.vpp),
      static_cast<long long>(sizes.dp), static_cast<long long>(config.layout.num_microbatches));
  int layers_width = 6;
  for (const auto& stage : m.stages) {
    layers_width = std::max(layers_width, static_cast<int>(layer_ranges(stage.layers).size()));
  }
  const bool unit_buffers = config.layout.data_sharding >= models::DataSharding::kGrads;
  std::printf("  %5s  %-*s %11s %11s %11s %11s", "stage", layers_width, "layers", "weights",
              "grads", "optimizer", "activations");
  if (unit_buffers) std::printf(" %12s", "unit buffers");
  std::printf(" %11s %11s %11s\n", "allocated", "reserved", "peak");
  for (const auto& stage : m.stages) print_stage(stage, layers_width, unit_buffers);
  std::printf(
      "allocated: tracked bytes + cuBLAS/TE workspaces (max_memory_allocated); reserved: + the "
      "caching allocator's segments and fragmentation (max_memory_reserved); peak: + CUDA "
      "context and NCCL buffers\n");
  std::printf("peak %s on stage %lld of %s HBM, %.0f%% kept free: %s\n",
              format_bytes(m.peak_bytes).c_str(), static_cast<long long>(m.worst_stage),
              format_bytes(m.hbm_bytes).c_str(), 100 * m.fit_margin,
              m.fits_in_memory ? "fits" : "DOES NOT FIT");
  for (const auto& note : m.notes) std::printf("note: %s\n", note.c_str());
}

int run(const ConfigCommandOptions& options) {
  const models::RunConfig config = load_config(options);
  models::MemoryReport report = models::memory_report(
      config.model, config.layout, config.training, hbm_bytes(config), compute_capability(config));
  report.notes.insert(report.notes.begin(), config.layout.notes.begin(), config.layout.notes.end());
  if (options.json) {
    log_notes(config.layout.notes);
    std::cout << models::memory_json(report).dump(2) << "\n";
  } else {
    print_table(config, report);
  }
  return 0;
}

}  // namespace

void add_memory_command(CLI::App& app, CommandSet& commands) {
  auto options = std::make_shared<ConfigCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "memory", "Memory per GPU of every pipeline stage (weights, grads, optimizer, activations)");
  add_config_options(*sub, *options);
  add_megatron_args_option(*sub, *options);
  sub->callback([options, &commands] { commands.action = [options] { return run(*options); }; });
}

}  // namespace wallsim::cli
