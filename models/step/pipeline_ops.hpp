// One rank's pass through its pipeline schedule (pipeline_schedule.hpp): the forward and
// backward of every (micro-batch, chunk) on the compute stream in Megatron's order, with the
// pipeline transfers between virtual stages (mechanics.md §6.3).
//
// Virtual stage chunk·pp + stage; its forward receives the activation [s'/(t if SP), b, h]
// (bf16) from the previous virtual stage (stage − 1, or stage pp − 1 of the chunk before) and
// sends its output to the next; its backward receives the gradient from the next and sends one
// back. Sends and receives go on four streams (send/recv × forward/backward) so that no receive
// blocks an unrelated send; the chunk's first op waits for its receive, a send waits for the
// chunk's last op. Receives are posted as early as their stream allows, as Megatron's
// overlapped p2p does; the compute stream waits only where it needs the data.
#pragma once

#include <optional>
#include <vector>

#include "models/layer_placement.hpp"
#include "models/pipeline_schedule.hpp"
#include "models/step/data_parallel_ops.hpp"
#include "models/step/layer_ops.hpp"

namespace wallsim::models {

struct PipelineSetting {
  std::int64_t pp = 1;
  std::int64_t vpp = 1;
  std::int64_t microbatches = 1;
  std::int64_t stage = 0;
  RankIndex previous_rank = 0;  // simulated rank of stage − 1 (mod pp), same TP/CP/DP coordinates
  RankIndex next_rank = 0;      // stage + 1 (mod pp)
  double transfer_bytes = 0;    // [s'/(t if SP), b, h] · 2
  bool mtp = false;             // the model has MTP layers (they run after the output layer)
  bool ep_overlap = false;      // MoE with overlap.ep_comm: forward/backward pairs combined
};

class PipelineOps {
 public:
  PipelineOps(OpEmitter& emit, LayerOps& layers, DataParallelOps& data_parallel,
              const PipelineSetting& setting, const StageLayers& stage_layers);

  void emit_schedule();

 private:
  void forward(std::int64_t microbatch, std::int64_t chunk);
  void backward(std::int64_t microbatch, std::int64_t chunk);
  void combined(const ScheduleStep& forward_step, const ScheduleStep& backward_step);
  Deps forward_prologue(std::int64_t microbatch, std::int64_t chunk);
  void forward_epilogue(std::int64_t microbatch, std::int64_t chunk, const Deps& input);
  Deps backward_prologue(std::int64_t microbatch, std::int64_t chunk,
                         std::vector<GradReady>& grads);
  void backward_epilogue(std::int64_t microbatch, std::int64_t chunk,
                         const std::vector<GradReady>& grads);
  std::vector<std::int64_t> chunk_layers(std::int64_t chunk, bool forward_pass) const;
  bool first_virtual_stage(std::int64_t chunk) const;
  bool last_virtual_stage(std::int64_t chunk) const;
  Deps receive(std::int64_t microbatch, bool forward_pass, RankIndex peer, StreamIndex stream);
  void send(std::int64_t microbatch, bool forward_pass, RankIndex peer, StreamIndex stream);
  Deps parameters_for(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                      const Deps& input);

  OpEmitter& emit_;
  LayerOps& layers_;
  DataParallelOps& data_parallel_;
  PipelineSetting setting_;
  StageLayers stage_layers_;
  std::vector<std::optional<OpIndex>> output_done_;  // last op of each micro-batch's loss
};

}  // namespace wallsim::models
