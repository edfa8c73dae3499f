#include "models/layer_placement.hpp"

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

using Sizes = std::vector<std::int64_t>;  // layers per virtual stage, virtual-stage order

[[noreturn]] void reject(const std::string& where, const std::string& path, std::int64_t value,
                         const std::string& problem) {
  throw InputError(where, path, std::to_string(value), problem);
}

// Even split over pp·vpp virtual stages; the remainder goes to the middle ones first.
Sizes even_sizes(const PlacementRequest& r, const std::string& where, std::string& note) {
  const std::int64_t virtual_stages = r.pp * r.vpp;
  if (r.layers < virtual_stages) {
    reject(where, "parallel.pp", r.pp,
           "model has " + std::to_string(r.layers) + " layers, fewer than pp·vpp = " +
               std::to_string(virtual_stages) + " pipeline chunks");
  }
  Sizes sizes(static_cast<std::size_t>(virtual_stages), r.layers / virtual_stages);
  std::int64_t extra = r.layers % virtual_stages;
  if (extra == 0) return sizes;
  note = std::to_string(r.layers) +
         " layers do not divide by pp·vpp = " + std::to_string(virtual_stages) +
         "; spread as evenly as possible (middle chunks first)";
  std::vector<std::int64_t> preference;
  for (std::int64_t v = 1; v + 1 < virtual_stages; ++v) preference.push_back(v);
  preference.push_back(0);
  preference.push_back(virtual_stages - 1);
  for (std::int64_t v : preference) {
    if (extra-- <= 0) break;
    ++sizes[static_cast<std::size_t>(v)];
  }
  return sizes;
}

std::int64_t per_chunk(std::int64_t stage_layers, const PlacementRequest& r,
                       const std::string& where, const std::string& path) {
  if (stage_layers % r.vpp != 0) {
    reject(where, path, stage_layers, "must divide by vpp = " + std::to_string(r.vpp));
  }
  return stage_layers / r.vpp;
}

// Megatron's uneven split: given first/last stage counts, the rest shared equally.
Sizes uneven_sizes(const PlacementRequest& r, const std::string& where, std::string& note) {
  const std::int64_t first = r.first_stage_layers.value_or(-1);
  const std::int64_t last = r.last_stage_layers.value_or(-1);
  std::int64_t rest = r.layers - (first > 0 ? first : 0) - (last > 0 ? last : 0);
  const std::int64_t middle_stages = r.pp - (first >= 0) - (last >= 0);
  if (r.pp < 2 || middle_stages < 0) {
    reject(where, "parallel.pp", r.pp, "first/last_stage_layers need pp >= 2 (one each)");
  }
  if (rest < 0 || (middle_stages == 0 && rest != 0) ||
      (middle_stages > 0 && rest % middle_stages != 0)) {
    reject(where, first >= 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers",
           first >= 0 ? first : last,
           "the other " + std::to_string(r.layers) +
               " - first - last layers must divide evenly "
               "over the remaining " +
               std::to_string(middle_stages) + " stages");
  }
  const std::int64_t middle = middle_stages > 0 ? rest / middle_stages : 0;
  std::vector<std::int64_t> stage(static_cast<std::size_t>(r.pp), middle);
  if (first >= 0) stage.front() = first;
  if (last >= 0) stage.back() = last;
  Sizes sizes(static_cast<std::size_t>(r.pp * r.vpp));
  for (std::int64_t s = 0; s < r.pp; ++s) {
    const std::string path = s == 0 && first >= 0         ? "parallel.first_stage_layers"
                             : s == r.pp - 1 && last >= 0 ? "parallel.last_stage_layers"
                                                          : "parallel.pp";
    const std::int64_t chunk = per_chunk(stage[static_cast<std::size_t>(s)], r, where, path);
    for (std::int64_t c = 0; c < r.vpp; ++c) {
      sizes[static_cast<std::size_t>(r.virtual_stages.of(s, c))] = chunk;
    }
  }
  note = "uneven pipeline split from parallel.first_stage_layers / last_stage_layers";
  return sizes;
}

// With several chains (DualPipe) the split is of one chain's positions, each one chunk: the
// request as for a pipeline of chain_length stages without interleaving.
PlacementRequest one_chain(const PlacementRequest& request) {
  const std::int64_t positions = request.virtual_stages.chain_length();
  if (request.virtual_stages.chains() == 1) return request;
  PlacementRequest chain = request;
  chain.pp = positions;
  chain.vpp = 1;
  chain.virtual_stages = VirtualStages(*find_pipeline_schedule("1f1b"), {positions, 1, 1});
  return chain;
}

}  // namespace

std::int64_t StageLayers::total() const {
  std::int64_t sum = 0;
  for (const auto& chunk : chunks) sum += chunk.count;
  return sum;
}

LayerPlacement place_layers(const PlacementRequest& request, const std::string& where) {
  LayerPlacement placement;
  const bool custom = request.first_stage_layers || request.last_stage_layers;
  const PlacementRequest chain = one_chain(request);
  Sizes sizes;
  if (!request.layout_sizes.empty()) {
    sizes = request.layout_sizes;  // as the user placed them: nothing to note
  } else {
    sizes = custom ? uneven_sizes(chain, where, placement.note)
                   : even_sizes(chain, where, placement.note);
  }
  placement.stages.resize(static_cast<std::size_t>(request.pp));
  // Every chain places the same layers: position i of each holds sizes[i] from the same layer.
  std::int64_t next_layer = 0;
  for (std::int64_t v = 0; v < request.virtual_stages.count(); ++v) {
    const std::int64_t position = request.virtual_stages.position(v);
    if (position == 0) next_layer = 0;
    const std::int64_t count = sizes[static_cast<std::size_t>(position)];
    const StageChunk place = request.virtual_stages.place(v);
    auto& entry = placement.stages[static_cast<std::size_t>(place.stage)];
    entry.stage = place.stage;
    entry.chunks.resize(static_cast<std::size_t>(request.vpp));
    entry.chunks[static_cast<std::size_t>(place.chunk)] = {place.chunk, next_layer, count};
    next_layer += count;
    if (count != sizes.front()) placement.uneven = true;
  }
  return placement;
}

}  // namespace wallsim::models
