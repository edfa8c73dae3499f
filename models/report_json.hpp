// The `flops` and `memory` objects of the outputs, as JSON (`wallsim flops --json`,
// `wallsim memory --json`, and summary.json). Units: FLOPs and bytes as doubles.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "models/flops.hpp"
#include "models/memory.hpp"

namespace wallsim::models {

// model_per_iteration, hardware_per_iteration, recompute_per_iteration, tokens_per_iteration,
// model_per_token, hardware_per_token, model_per_gpu, hardware_per_gpu, breakdown{...}, notes.
nlohmann::json flops_json(const IterationFlops& flops, const std::vector<std::string>& notes);

// peak_bytes, peak_allocated_bytes, peak_reserved_bytes, worst_stage, hbm_bytes, fit_margin,
// fits_in_memory, optimizer_shards, megatron_static_bytes, per_stage[] {stage, weights, grads,
// optimizer, activations, buffers, unit_buffers, wgrad_placeholders, grad_transients,
// workspaces, allocated, allocator_slack, reserved, outside_allocator, peak, parameters,
// microbatches_in_flight, embedding, output_layer, layers[] {chunk, first_layer, last_layer,
// count}}, notes.
nlohmann::json memory_json(const MemoryReport& memory);

}  // namespace wallsim::models
