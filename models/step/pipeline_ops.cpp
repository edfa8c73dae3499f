#include "models/step/pipeline_ops.hpp"

#include "models/pipeline_schedule.hpp"

namespace wallsim::models {
namespace {

Deps joined(Deps a, const Deps& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Activations and gradients travel on separate tags: with pp = 2 (or interleaving's wrap-around)
// both flow between the same two ranks in the same direction.
std::uint16_t transfer_tag(bool forward_pass) {
  return forward_pass ? 0 : 1;
}

}  // namespace

PipelineOps::PipelineOps(OpEmitter& emit, LayerOps& layers, DataParallelOps& data_parallel,
                         const PipelineSetting& setting, const StageLayers& stage_layers)
    : emit_(emit),
      layers_(layers),
      data_parallel_(data_parallel),
      setting_(setting),
      stage_layers_(stage_layers) {}

bool PipelineOps::first_virtual_stage(std::int64_t chunk) const {
  return setting_.stage == 0 && chunk == 0;
}

bool PipelineOps::last_virtual_stage(std::int64_t chunk) const {
  return setting_.stage == setting_.pp - 1 && chunk == setting_.vpp - 1;
}

void PipelineOps::emit_schedule() {
  output_done_.assign(static_cast<std::size_t>(setting_.microbatches), std::nullopt);
  const auto steps =
      stage_schedule(setting_.pp, setting_.vpp, setting_.microbatches, setting_.stage);
  for (const ScheduleStep& step : steps) {
    if (step.forward) {
      forward(step.microbatch, step.chunk);
    } else {
      backward(step.microbatch, step.chunk);
    }
  }
}

// With pp = 1 every virtual stage is on this rank: the tensor stays where it is.
Deps PipelineOps::receive(std::int64_t microbatch, bool forward_pass, RankIndex peer,
                          StreamIndex stream) {
  if (setting_.pp == 1) return {};
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.prefix = "pp";
  emit_.set_tag(std::move(t));
  return {emit_.recv(forward_pass ? "recv activation" : "recv gradient", peer,
                     setting_.transfer_bytes, stream, transfer_tag(forward_pass))};
}

void PipelineOps::send(std::int64_t microbatch, bool forward_pass, RankIndex peer,
                       StreamIndex stream) {
  if (setting_.pp == 1) return;
  Deps after;
  if (const auto last = emit_.last_compute()) after.push_back(*last);
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.prefix = "pp";
  emit_.set_tag(std::move(t));
  emit_.send(forward_pass ? "send activation" : "send gradient", peer, setting_.transfer_bytes,
             stream, transfer_tag(forward_pass), after);
}

Deps PipelineOps::parameters_for(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                                 const Deps& input) {
  if (microbatch != 0) return {};
  return data_parallel_.before_first_forward(chunk, module, input);
}

void PipelineOps::forward(std::int64_t microbatch, std::int64_t chunk) {
  Deps input;
  if (!first_virtual_stage(chunk)) {
    input = receive(microbatch, true, setting_.previous_rank, Streams::kPpRecvForward);
  }
  if (first_virtual_stage(chunk)) {
    const Deps params = parameters_for(microbatch, chunk, kEmbeddingModule, input);
    input = {layers_.embedding_forward(microbatch, joined(input, params))};
  }
  const ChunkLayers& layers = stage_layers_.chunks[static_cast<std::size_t>(chunk)];
  for (std::int64_t layer = layers.first_layer; layer < layers.first_layer + layers.count;
       ++layer) {
    const Deps params = parameters_for(microbatch, chunk, layer, input);
    input = {layers_.forward(microbatch, layer, joined(input, params))};
  }
  if (last_virtual_stage(chunk)) {
    const Deps params = parameters_for(microbatch, chunk, kOutputModule, input);
    OpIndex done = layers_.output_forward(microbatch, joined(input, params));
    if (setting_.mtp) done = layers_.mtp_forward(microbatch, {done});
    output_done_[static_cast<std::size_t>(microbatch)] = done;
  } else {
    send(microbatch, true, setting_.next_rank, Streams::kPpSendForward);
  }
}

void PipelineOps::backward(std::int64_t microbatch, std::int64_t chunk) {
  std::vector<GradReady> grads;
  Deps input;
  if (last_virtual_stage(chunk)) {
    // The loss gradient needs the forward's last cross-entropy all-reduce.
    Deps loss{*output_done_[static_cast<std::size_t>(microbatch)]};
    if (setting_.mtp) loss = {layers_.mtp_backward(microbatch, loss, grads)};
    input = {layers_.output_backward(microbatch, loss, grads)};
  } else {
    input = receive(microbatch, false, setting_.next_rank, Streams::kPpRecvBackward);
  }
  const ChunkLayers& layers = stage_layers_.chunks[static_cast<std::size_t>(chunk)];
  for (std::int64_t layer = layers.first_layer + layers.count; layer-- > layers.first_layer;) {
    input = {layers_.backward(microbatch, layer, input, grads)};
  }
  if (first_virtual_stage(chunk)) {
    layers_.embedding_backward(microbatch, grads);
  } else {
    send(microbatch, false, setting_.previous_rank, Streams::kPpSendBackward);
  }
  if (microbatch == setting_.microbatches - 1) data_parallel_.chunk_gradients_ready(chunk, grads);
}

}  // namespace wallsim::models
