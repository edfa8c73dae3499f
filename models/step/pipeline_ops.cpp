#include "models/step/pipeline_ops.hpp"

#include <algorithm>
#include <stdexcept>

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

std::vector<std::int64_t> PipelineSetting::neighbour_stages() const {
  std::vector<std::int64_t> stages;
  for (std::int64_t chunk = 0; chunk < shape.vpp; ++chunk) {
    for (const std::int64_t step : {-1, +1}) {
      const auto w = virtual_stages.next(stage, chunk, step);
      if (!w) continue;
      const std::int64_t other = virtual_stages.place(*w).stage;
      if (other != stage) stages.push_back(other);
    }
  }
  std::sort(stages.begin(), stages.end());
  stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
  return stages;
}

bool PipelineOps::first_virtual_stage(std::int64_t chunk) const {
  return setting_.virtual_stages.first(setting_.stage, chunk);
}

bool PipelineOps::last_virtual_stage(std::int64_t chunk) const {
  return setting_.virtual_stages.last(setting_.stage, chunk);
}

std::optional<RankIndex> PipelineOps::neighbour(std::int64_t chunk, std::int64_t step) const {
  const VirtualStages& virtual_stages = setting_.virtual_stages;
  const std::int64_t stage =
      virtual_stages.place(*virtual_stages.next(setting_.stage, chunk, step)).stage;
  if (stage == setting_.stage) return std::nullopt;
  return setting_.stage_ranks[static_cast<std::size_t>(stage)];
}

void PipelineOps::emit_schedule() {
  output_done_.assign(static_cast<std::size_t>(setting_.shape.microbatches), std::nullopt);
  const auto items = setting_.schedule->order(setting_.shape, setting_.stage);
  // A chunk's gradients are complete after its chain's last micro-batch (m − 1 with one chain).
  last_microbatch_.assign(static_cast<std::size_t>(setting_.shape.vpp), -1);
  for (const ScheduleItem& item : items) {
    auto& last = last_microbatch_[static_cast<std::size_t>(item.chunk)];
    last = std::max(last, item.microbatch);
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const ScheduleItem& item = items[i];
    if (item.pass == Pass::kWeight) {
      weight(item.microbatch, item.chunk);
      continue;
    }
    // A backward pairs with the forward after it, so the steady state starts one forward later
    // (Megatron's extra warm-up micro-batch) and the pair's inputs come from earlier pairs.
    const bool pair = setting_.ep_overlap && item.pass == Pass::kBackward && i + 1 < items.size() &&
                      items[i + 1].forward() && items[i + 1].microbatch != item.microbatch;
    if (pair) {
      combined(items[i + 1], item);
      ++i;
    } else if (item.forward()) {
      forward(item.microbatch, item.chunk);
    } else {
      backward(item.microbatch, item.chunk);
    }
  }
}

// The first neighbour a stream carries transfers with keeps it; a second neighbour (a V shape's
// or DualPipe's other direction) gets the matching second stream.
StreamIndex PipelineOps::stream_for(StreamIndex stream, RankIndex peer) {
  const auto [it, first] = stream_peer_.emplace(stream, peer);
  if (first || it->second == peer) return stream;
  switch (stream) {
    case Streams::kPpSendForward:
      return Streams::kPpSendForward2;
    case Streams::kPpSendBackward:
      return Streams::kPpSendBackward2;
    case Streams::kPpRecvForward:
      return Streams::kPpRecvForward2;
    default:
      return Streams::kPpRecvBackward2;
  }
}

// A neighbouring virtual stage on this rank (every one, with pp = 1): the tensor stays.
Deps PipelineOps::receive(std::int64_t microbatch, bool forward_pass, std::optional<RankIndex> peer,
                          StreamIndex stream) {
  if (!peer) return {};
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.prefix = "pp";
  emit_.set_tag(std::move(t));
  return {emit_.recv(forward_pass ? "recv activation" : "recv gradient", *peer,
                     setting_.transfer_bytes, stream_for(stream, *peer),
                     transfer_tag(forward_pass))};
}

void PipelineOps::send(std::int64_t microbatch, bool forward_pass, std::optional<RankIndex> peer,
                       StreamIndex stream) {
  if (!peer) return;
  Deps after;
  if (const auto last = emit_.last_compute()) after.push_back(*last);
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.prefix = "pp";
  emit_.set_tag(std::move(t));
  emit_.send(forward_pass ? "send activation" : "send gradient", *peer, setting_.transfer_bytes,
             stream_for(stream, *peer), transfer_tag(forward_pass), after);
}

Deps PipelineOps::parameters_for(std::int64_t microbatch, std::int64_t chunk, std::int64_t module,
                                 const Deps& input) {
  return data_parallel_.before_forward(microbatch, chunk, module, input);
}

Deps PipelineOps::forward_prologue(std::int64_t microbatch, std::int64_t chunk) {
  Deps input;
  if (!first_virtual_stage(chunk)) {
    input = receive(microbatch, true, neighbour(chunk, -1), Streams::kPpRecvForward);
  }
  if (first_virtual_stage(chunk)) {
    const Deps params = parameters_for(microbatch, chunk, kEmbeddingModule, input);
    input = {layers_.embedding_forward(microbatch, joined(input, params))};
    data_parallel_.after_forward(chunk, kEmbeddingModule);
  }
  return input;
}

void PipelineOps::forward_epilogue(std::int64_t microbatch, std::int64_t chunk, const Deps& input) {
  if (last_virtual_stage(chunk)) {
    const Deps params = parameters_for(microbatch, chunk, kOutputModule, input);
    OpIndex done = layers_.output_forward(microbatch, joined(input, params));
    if (setting_.mtp) done = layers_.mtp_forward(microbatch, {done});
    data_parallel_.after_forward(chunk, kOutputModule);
    output_done_[static_cast<std::size_t>(microbatch)] = done;
  } else {
    send(microbatch, true, neighbour(chunk, +1), Streams::kPpSendForward);
  }
}

Deps PipelineOps::backward_prologue(std::int64_t microbatch, std::int64_t chunk,
                                    std::vector<GradReady>& grads) {
  if (last_virtual_stage(chunk)) {
    // The loss gradient needs the forward's last cross-entropy all-reduce.
    Deps loss{*output_done_[static_cast<std::size_t>(microbatch)]};
    loss = joined(loss, data_parallel_.before_backward(microbatch, chunk, kOutputModule, loss));
    if (setting_.mtp) loss = {layers_.mtp_backward(microbatch, loss, grads)};
    const OpIndex done = layers_.output_backward(microbatch, loss, grads);
    data_parallel_.after_backward(microbatch, chunk, kOutputModule, grads);
    return {done};
  }
  return receive(microbatch, false, neighbour(chunk, +1), Streams::kPpRecvBackward);
}

void PipelineOps::backward_epilogue(std::int64_t microbatch, std::int64_t chunk,
                                    const std::vector<GradReady>& grads_in) {
  std::vector<GradReady> grads = grads_in;
  if (first_virtual_stage(chunk)) {
    data_parallel_.before_backward(microbatch, chunk, kEmbeddingModule, {});
    layers_.embedding_backward(microbatch, grads);
    data_parallel_.after_backward(microbatch, chunk, kEmbeddingModule, grads);
  } else {
    send(microbatch, false, neighbour(chunk, -1), Streams::kPpSendBackward);
  }
  if (setting_.schedule->splits_weight_gradients) {
    pending_weights_[{microbatch, chunk}] = {emit_.take_deferred_weight_gradients(),
                                             std::move(grads)};
    return;
  }
  if (microbatch == last_microbatch_[static_cast<std::size_t>(chunk)]) {
    data_parallel_.chunk_gradients_ready(chunk, grads);
  }
}

void PipelineOps::weight(std::int64_t microbatch, std::int64_t chunk) {
  const auto it = pending_weights_.find({microbatch, chunk});
  if (it == pending_weights_.end()) {
    throw std::logic_error("pipeline schedule \"" + setting_.schedule->name +
                           "\": a W pass before its B pass");
  }
  PendingWeights pending = std::move(it->second);
  pending_weights_.erase(it);
  emit_.emit_weight_gradients(std::move(pending.deferred), pending.grads);
  if (microbatch == last_microbatch_[static_cast<std::size_t>(chunk)]) {
    data_parallel_.chunk_gradients_ready(chunk, pending.grads);
  }
}

bool PipelineOps::offloaded(std::int64_t chunk, std::int64_t layer) const {
  if (setting_.offload_bytes.empty()) return false;
  const ChunkLayers& layers = stage_layers_.chunks[static_cast<std::size_t>(chunk)];
  return offloaded_in_chunk(layer - layers.first_layer, layers.count, setting_.offload_layers);
}

void PipelineOps::offload_out(std::int64_t microbatch, std::int64_t layer) {
  const double bytes = setting_.offload_bytes[static_cast<std::size_t>(layer)];
  Deps after;
  if (const auto last = emit_.last_compute()) after.push_back(*last);
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.layer = static_cast<std::int32_t>(layer);
  t.prefix = "L" + std::to_string(layer);
  emit_.set_tag(std::move(t));
  emit_.host_copy("activations to host", bytes, Time::from_seconds(bytes / setting_.host_link_Bps),
                  Streams::kOffloadOut, 0.0, bytes, after);
}

OpIndex PipelineOps::offload_in(std::int64_t microbatch, std::int64_t layer, const Deps& after) {
  const double bytes = setting_.offload_bytes[static_cast<std::size_t>(layer)];
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.layer = static_cast<std::int32_t>(layer);
  t.prefix = "L" + std::to_string(layer);
  emit_.set_tag(std::move(t));
  return emit_.host_copy("activations from host", bytes,
                         Time::from_seconds(bytes / setting_.host_link_Bps), Streams::kOffloadIn,
                         bytes, 0.0, after);
}

std::vector<std::int64_t> PipelineOps::chunk_layers(std::int64_t chunk, bool forward_pass) const {
  const ChunkLayers& layers = stage_layers_.chunks[static_cast<std::size_t>(chunk)];
  std::vector<std::int64_t> order;
  for (std::int64_t i = 0; i < layers.count; ++i) order.push_back(layers.first_layer + i);
  if (!forward_pass) std::reverse(order.begin(), order.end());
  return order;
}

void PipelineOps::forward(std::int64_t microbatch, std::int64_t chunk) {
  Deps input = forward_prologue(microbatch, chunk);
  for (std::int64_t layer : chunk_layers(chunk, true)) {
    const Deps params = parameters_for(microbatch, chunk, layer, input);
    input = {layers_.forward(microbatch, layer, joined(input, params))};
    data_parallel_.after_forward(chunk, layer);
    if (offloaded(chunk, layer)) offload_out(microbatch, layer);
  }
  forward_epilogue(microbatch, chunk, input);
}

void PipelineOps::backward(std::int64_t microbatch, std::int64_t chunk) {
  emit_.defer_weight_gradients(setting_.schedule->splits_weight_gradients);
  std::vector<GradReady> grads;
  Deps input = backward_prologue(microbatch, chunk, grads);
  // Offloaded layers come back one ahead: layer k's copy is dispatched as layer k+1's backward
  // can start.
  const std::vector<std::int64_t> layers = chunk_layers(chunk, false);
  std::map<std::int64_t, OpIndex> fetched;
  for (std::size_t k = 0; k < layers.size(); ++k) {
    const std::int64_t layer = layers[k];
    Deps params = data_parallel_.before_backward(microbatch, chunk, layer, input);
    if (offloaded(chunk, layer) && !fetched.count(layer)) {
      fetched[layer] = offload_in(microbatch, layer, input);
    }
    if (fetched.count(layer)) params.push_back(fetched[layer]);
    if (k + 1 < layers.size() && offloaded(chunk, layers[k + 1])) {
      fetched[layers[k + 1]] = offload_in(microbatch, layers[k + 1], input);
    }
    input = {layers_.backward(microbatch, layer, joined(input, params), grads)};
    data_parallel_.after_backward(microbatch, chunk, layer, grads);
  }
  backward_epilogue(microbatch, chunk, grads);
  emit_.defer_weight_gradients(false);
}

// Megatron's EP overlap: the forward of one micro-batch and the backward of another run layer
// pair by layer pair (forward layers ascending, backward descending). For two MoE layers the
// streams follow mechanics.md §4.2: compute runs the backward's unpermute, the forward's
// attention and router, the backward's experts, the forward's experts, the rest of the
// backward, the rest of the forward, while the EP stream carries combine (backward), dispatch
// (forward), dispatch (backward), combine (forward), each beside the other micro-batch's work.
void PipelineOps::combined(const ScheduleItem& f, const ScheduleItem& b) {
  std::vector<GradReady> grads;
  Deps forward_input = forward_prologue(f.microbatch, f.chunk);
  Deps backward_input = backward_prologue(b.microbatch, b.chunk, grads);
  const auto forward_layers = chunk_layers(f.chunk, true);
  const auto backward_layers = chunk_layers(b.chunk, false);
  for (std::size_t k = 0; k < std::max(forward_layers.size(), backward_layers.size()); ++k) {
    const bool has_f = k < forward_layers.size(), has_b = k < backward_layers.size();
    if (has_f && has_b && layers_.overlappable(forward_layers[k]) &&
        layers_.overlappable(backward_layers[k])) {
      const Deps params = parameters_for(f.microbatch, f.chunk, forward_layers[k], forward_input);
      const Deps backward_params =
          data_parallel_.before_backward(b.microbatch, b.chunk, backward_layers[k], backward_input);
      LayerBackward back = layers_.backward_begin(b.microbatch, backward_layers[k],
                                                  joined(backward_input, backward_params));
      LayerForward fwd =
          layers_.forward_begin(f.microbatch, forward_layers[k], joined(forward_input, params));
      layers_.backward_experts(back);
      layers_.forward_experts(fwd);
      backward_input = {layers_.backward_end(back, grads)};
      data_parallel_.after_backward(b.microbatch, b.chunk, backward_layers[k], grads);
      forward_input = {layers_.forward_end(fwd)};
      data_parallel_.after_forward(f.chunk, forward_layers[k]);
      continue;
    }
    if (has_f) {
      const Deps params = parameters_for(f.microbatch, f.chunk, forward_layers[k], forward_input);
      forward_input = {
          layers_.forward(f.microbatch, forward_layers[k], joined(forward_input, params))};
      data_parallel_.after_forward(f.chunk, forward_layers[k]);
    }
    if (has_b) {
      const Deps params =
          data_parallel_.before_backward(b.microbatch, b.chunk, backward_layers[k], backward_input);
      backward_input = {layers_.backward(b.microbatch, backward_layers[k],
                                         joined(backward_input, params), grads)};
      data_parallel_.after_backward(b.microbatch, b.chunk, backward_layers[k], grads);
    }
  }
  forward_epilogue(f.microbatch, f.chunk, forward_input);
  backward_epilogue(b.microbatch, b.chunk, grads);
}

}  // namespace wallsim::models
