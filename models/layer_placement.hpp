// Which transformer layers each pipeline stage (and each of its virtual chunks) holds.
//
// Layers fill the virtual pipeline stages (the chain of model chunks) in order; which chunk of
// which stage each virtual stage is comes from the pipeline schedule (Megatron numbers them
// chunk-major: virtual stage c·pp + s is chunk c of stage s). With `first_stage_layers` /
// `last_stage_layers` (Megatron's --decoder-first/last-pipeline-num-layers) those stages hold
// the given counts and the other stages share the rest equally, which must divide; every count
// must divide by vpp. Without them, layers that do not divide by pp·vpp are spread as evenly as
// possible (Megatron itself would refuse): the extra layers go to the middle virtual stages
// first, because the first stage also holds the embedding and the last the output layer. A
// pipeline layout (models/pipeline_layout.hpp) gives every virtual stage's count directly.
// With a schedule of several chains (DualPipe) the split is of one chain's positions, as for a
// pipeline of that many stages without interleaving, and every chain places the same layers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/pipeline_schedule.hpp"

namespace wallsim::models {

struct ChunkLayers {
  std::int64_t chunk = 0;        // virtual chunk index on this stage
  std::int64_t first_layer = 0;  // 0-based global layer index
  std::int64_t count = 0;
};

struct StageLayers {
  std::int64_t stage = 0;
  std::vector<ChunkLayers> chunks;  // vpp entries, in chunk order
  std::int64_t total() const;
};

struct LayerPlacement {
  std::vector<StageLayers> stages;  // pp entries
  bool uneven = false;              // not every virtual stage holds the same count
  std::string note;                 // how the split was chosen, when not the plain even split
};

struct PlacementRequest {
  std::int64_t layers = 0;
  std::int64_t pp = 1;
  std::int64_t vpp = 1;
  std::optional<std::int64_t> first_stage_layers;
  std::optional<std::int64_t> last_stage_layers;
  VirtualStages virtual_stages;  // pp·vpp entries
  // Decoder layers per virtual stage from parallel.pipeline_layout (pp·vpp entries, chain order);
  // empty: the split above.
  std::vector<std::int64_t> layout_sizes;
};

// Throws InputError (file `where`, path parallel.first_stage_layers / last_stage_layers /
// pp) when the request cannot be placed.
LayerPlacement place_layers(const PlacementRequest& request, const std::string& where);

}  // namespace wallsim::models
