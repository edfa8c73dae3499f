#include "models/report_json.hpp"

#include <nlohmann/json.hpp>

namespace wallsim::models {
namespace {

nlohmann::json layers_json(const StageLayers& layers) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& chunk : layers.chunks) {
    out.push_back({{"chunk", chunk.chunk},
                   {"first_layer", chunk.first_layer},
                   {"last_layer", chunk.first_layer + chunk.count - 1},
                   {"count", chunk.count}});
  }
  return out;
}

nlohmann::json stage_json(const StageMemory& s) {
  nlohmann::json out = {{"stage", s.stage},
                        {"weights", s.weights},
                        {"grads", s.grads},
                        {"optimizer", s.optimizer},
                        {"activations", s.activations},
                        {"buffers", s.buffers},
                        {"unit_buffers", s.unit_buffers},
                        {"wgrad_placeholders", s.wgrad_placeholders},
                        {"grad_transients", s.grad_transients},
                        {"workspaces", s.workspaces},
                        {"allocated", s.allocated},
                        {"allocator_slack", s.allocator_slack},
                        {"reserved", s.reserved},
                        {"outside_allocator", s.outside_allocator},
                        {"peak", s.peak},
                        {"parameters", s.parameters},
                        {"microbatches_in_flight", s.microbatches_in_flight},
                        {"embedding", s.embedding},
                        {"output_layer", s.output_layer},
                        {"layers", layers_json(s.layers)}};
  if (s.host_optimizer > 0) out["host_optimizer"] = s.host_optimizer;
  if (s.optimizer_staging > 0) out["optimizer_staging"] = s.optimizer_staging;
  if (s.cuda_graphs > 0) out["cuda_graphs"] = s.cuda_graphs;
  return out;
}

}  // namespace

nlohmann::json flops_json(const IterationFlops& f, const std::vector<std::string>& notes) {
  return {{"model_per_iteration", f.model_per_iteration},
          {"hardware_per_iteration", f.hardware_per_iteration},
          {"recompute_per_iteration", f.recompute_per_iteration},
          {"tokens_per_iteration", f.tokens},
          {"model_per_token", f.model_per_token},
          {"hardware_per_token", f.hardware_per_token},
          {"model_per_gpu", f.model_per_gpu},
          {"hardware_per_gpu", f.hardware_per_gpu},
          {"breakdown",
           {{"attention_linear", f.model.attention_linear},
            {"attention_core", f.model.attention_core},
            {"mlp", f.model.mlp},
            {"logits", f.model.logits}}},
          {"notes", notes}};
}

nlohmann::json memory_json(const MemoryReport& m) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& stage : m.stages) stages.push_back(stage_json(stage));
  return {{"peak_bytes", m.peak_bytes},
          {"peak_allocated_bytes", m.peak_allocated_bytes},
          {"peak_reserved_bytes", m.peak_reserved_bytes},
          {"worst_stage", m.worst_stage},
          {"hbm_bytes", m.hbm_bytes},
          {"fit_margin", m.fit_margin},
          {"fits_in_memory", m.fits_in_memory},
          {"optimizer_shards", m.optimizer_shards},
          {"megatron_static_bytes", m.megatron_static_bytes},
          {"per_stage", stages},
          {"notes", m.notes}};
}

}  // namespace wallsim::models
