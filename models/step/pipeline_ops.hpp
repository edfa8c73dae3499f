// One rank's pass through its pipeline schedule (models/pipeline_schedule.hpp): the forward and
// backward of every (micro-batch, chunk) on the compute stream in the schedule's order, with the
// pipeline transfers between virtual stages (docs/reference/mechanics.md §6.3).
//
// Chunk c of this stage is virtual stage v (the schedule's placement). Its forward receives the
// activation [s'/(t if SP), b, h] (bf16) from the stage holding virtual stage v − 1 and sends its
// output to the one holding v + 1; its backward receives the gradient from v + 1 and sends one
// back; v ± 1 stay in v's chain (DualPipe's two directions are two chains). A neighbour on this
// same stage needs no transfer. Sends and receives go on four streams
// (send/recv × forward/backward) so that no receive blocks an unrelated send, and transfers with
// a second neighbour (a stage of a V or of DualPipe exchanges activations and gradients with both)
// on four more, so that one neighbour's transfer never waits behind another's; the chunk's first
// op waits for its receive, a send waits for the chunk's last op. Receives are posted as early as
// their stream allows, as Megatron's overlapped p2p does; the compute stream waits only where it
// needs the data.
//
// Activation offloading: after a layer's forward its saved activations (with a module list only
// what those modules save, `offload_bytes`) are copied to host memory (stream offload d2h) and
// freed on the GPU when the copy ends; before its backward they are
// copied back (offload h2d, allocated when that copy starts), the copy dispatched when the
// backward of the layer after it starts, one layer ahead, as Megatron's and TE's offload
// handlers prefetch. The chunk's last layer is kept: its backward comes first.
//
// Schedules with W passes (zero-bubble): the backward (B) of a chunk records its weight-gradient
// GEMMs and the frees of its saved tensors instead of emitting them (OpEmitter's deferral); the
// chunk's W pass emits them, and after the last micro-batch's W the chunk's gradients are ready
// for the data-parallel reduction.
#pragma once

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "models/layer_placement.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/step/data_parallel_ops.hpp"
#include "models/step/layer_ops.hpp"

namespace wallsim::models {

struct PipelineSetting {
  const PipelineSchedule* schedule = nullptr;
  PipelineShape shape;
  VirtualStages virtual_stages;
  std::int64_t stage = 0;
  std::vector<RankIndex> stage_ranks;  // simulated rank of each stage, same TP/CP/DP coordinates
  double transfer_bytes = 0;           // [s'/(t if SP), b, h] · 2
  bool mtp = false;                    // the model has MTP layers (they run after the output layer)
  bool ep_overlap = false;             // MoE with overlap.ep_comm: forward/backward pairs combined
  // Activation offloading (training.offload.activations): the bytes each decoder layer saves
  // per micro-batch, by layer (empty: off), and the GPU <-> host copy rate.
  std::vector<double> offload_bytes;
  double host_link_Bps = 0;
  std::optional<std::int64_t> offload_layers;  // only the first N of each chunk (all but the last)

  // The stages this one exchanges activations or gradients with, ascending.
  std::vector<std::int64_t> neighbour_stages() const;
};

class PipelineOps {
 public:
  PipelineOps(OpEmitter& emit, LayerOps& layers, DataParallelOps& data_parallel,
              const PipelineSetting& setting, const StageLayers& stage_layers);

  void emit_schedule();

 private:
  void forward(std::int64_t microbatch, std::int64_t chunk);
  void backward(std::int64_t microbatch, std::int64_t chunk);
  void weight(std::int64_t microbatch, std::int64_t chunk);
  void combined(const ScheduleItem& forward_item, const ScheduleItem& backward_item);
  Deps forward_prologue(std::int64_t microbatch, std::int64_t chunk);
  void forward_epilogue(std::int64_t microbatch, std::int64_t chunk, const Deps& input);
  Deps backward_prologue(std::int64_t microbatch, std::int64_t chunk,
                         std::vector<GradReady>& grads);
  void backward_epilogue(std::int64_t microbatch, std::int64_t chunk,
                         const std::vector<GradReady>& grads);
  std::vector<std::int64_t> chunk_layers(std::int64_t chunk, bool forward_pass) const;
  bool first_virtual_stage(std::int64_t chunk) const;
  bool last_virtual_stage(std::int64_t chunk) const;
  // The stage holding the virtual stage `step` (±1) away from chunk `chunk`, or nullopt when that
  // is this stage (no transfer).
  std::optional<RankIndex> neighbour(std::int64_t chunk, std::int64_t step) const;
  Deps receive(std::int64_t microbatch, bool forward_pass, std::optional<RankIndex> peer,
               StreamIndex stream);
  void send(std::int64_t microbatch, bool forward_pass, std::optional<RankIndex> peer,
            StreamIndex stream);
  StreamIndex stream_for(StreamIndex stream, RankIndex peer);
  Deps parameters_for(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                      const Deps& input);
  // Activation offloading: whether `layer` of `chunk` is offloaded (all but the chunk's last
  // layer, whose backward comes first), its copy to host after its forward, and its copy back.
  bool offloaded(std::int64_t chunk, std::int64_t layer) const;
  void offload_out(std::int64_t microbatch, std::int64_t layer);
  OpIndex offload_in(std::int64_t microbatch, std::int64_t layer, const Deps& after);

  OpEmitter& emit_;
  LayerOps& layers_;
  DataParallelOps& data_parallel_;
  PipelineSetting setting_;
  StageLayers stage_layers_;
  std::vector<std::optional<OpIndex>> output_done_;  // last op of each micro-batch's loss
  std::vector<std::int64_t> last_microbatch_;        // by chunk: the last its chain runs
  std::map<StreamIndex, RankIndex> stream_peer_;     // each transfer stream's first neighbour
  // B passes whose W pass has not run: what they deferred and their gradients, by (micro-batch,
  // chunk).
  struct PendingWeights {
    OpEmitter::DeferredWeightGradients deferred;
    std::vector<GradReady> grads;
  };
  std::map<std::pair<std::int64_t, std::int64_t>, PendingWeights> pending_weights_;
};

}  // namespace wallsim::models
