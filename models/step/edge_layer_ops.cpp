// The first and last parts of the model on their stages: the vocab-parallel input embedding
// (stage 0, chunk 0) and the final norm, output layer and vocab-parallel cross-entropy (last
// stage, last chunk). mechanics.md §1.1 "Other TP communication".
#include <string>

#include "models/step/layer_ops.hpp"

namespace wallsim::models {
GemmShape LayerOps::output_shape() const {
  return {dims_.tokens(), dims_.vocab / dims_.tp, dims_.hidden};
}

// The lookup reads b·s' rows of the table and writes them; each rank then holds partial sums
// (zeros outside its vocab shard) that TP all-reduces, or reduce-scatters to the sequence
// shard with SP.
OpIndex LayerOps::embedding_forward(std::int64_t microbatch, const Deps& deps) {
  tag(microbatch, std::nullopt, "embedding");
  emit_.allocate_on_next(memory_.embedding_bytes);
  const OpIndex lookup = emit_.memory_bound("fwd", 4.0 * dims_.hidden_elements(), deps);
  if (!tp_.active) return lookup;
  const CollectiveOp op =
      tp_.sequence_parallel ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce;
  return emit_.collective(tp_.sequence_parallel ? "rs" : "ar", op, dims_.tp_collective_bytes(),
                          tp_.group, OpCategory::kTp, Streams::kTp, {lookup});
}

// The gradient rows are scatter-added into the table: read dy, read and write the rows. The
// table's gradient is dense (PyTorch's embedding_dense_backward zero-fills one of the whole
// shard, 2 bytes per element) and, as the embedding is no fused-accumulation linear, Megatron's
// data-parallel hook adds it into the main gradient (param.main_grad.add_(param.grad): read the
// main gradient and the bf16 gradient, write the main gradient). With SP the sequence-sharded
// gradient is gathered first (the conjugate of the forward reduce-scatter).
OpIndex LayerOps::embedding_backward(std::int64_t microbatch, std::vector<GradReady>& grads) {
  tag(microbatch, std::nullopt, "embedding");
  Deps deps;
  if (tp_.active && tp_.sequence_parallel) {
    Deps producer;
    if (const auto last = emit_.last_compute()) producer.push_back(*last);
    deps.push_back(emit_.collective("grad ag", CollectiveOp::kAllGather,
                                    dims_.tp_collective_bytes(), tp_.group, OpCategory::kTp,
                                    Streams::kTp, producer));
  }
  emit_.free_on_next(memory_.embedding_bytes);
  const double table = static_cast<double>(output_shape().n * output_shape().k);
  emit_.memory_bound("grad zero", 2.0 * table, deps);
  // The table's gradient, counted from the scatter-add on (after the saved inputs are freed).
  emit_.allocate_on_next(memory_.embedding_grad_bytes);
  emit_.memory_bound("bwd", 6.0 * dims_.hidden_elements());
  emit_.free_on_next_in_backward(memory_.embedding_grad_bytes);
  const OpIndex update =
      emit_.memory_bound("main grad add", (2.0 * dims_.main_grad_bytes + 2.0) * table);
  grads.push_back({static_cast<double>(output_shape().n * output_shape().k), update});
  return update;
}

OpIndex LayerOps::output_forward(std::int64_t microbatch, const Deps& deps) {
  tag(microbatch, std::nullopt, "output");
  emit_.allocate_on_next(memory_.output_bytes);
  emit_.memory_bound("final norm fwd", norm_forward_bytes(), deps);
  const OpIndex logits = output_linear_.column_forward("linear", output_shape());
  return cross_entropy_forward(logits);
}

// The passes of models/cross_entropy.hpp over this rank's logits, each followed by its
// per-token TP collectives.
OpIndex LayerOps::cross_entropy_forward(OpIndex logits_ready) {
  const double logits = static_cast<double>(output_shape().m * output_shape().n);
  const double tokens = static_cast<double>(dims_.tokens());
  OpIndex last = logits_ready;
  for (const LogitPass& pass : cross_entropy_kernels(dims_.cross_entropy).forward) {
    const std::string name = "cross-entropy " + std::string(pass.name);
    last = emit_.memory_bound(name, pass.bytes_per_logit * logits, {last});
    if (!tp_.active || pass.then == LogitCollective::kNone) continue;
    for (int i = 0; i < pass.collectives; ++i) {
      if (pass.then == LogitCollective::kAllGather) {
        last = emit_.collective(name + " ag", CollectiveOp::kAllGather,
                                pass.bytes_per_token * tokens * static_cast<double>(dims_.tp),
                                tp_.group, OpCategory::kTp, Streams::kTp, {last});
      } else {
        last =
            emit_.collective(name + " ar", CollectiveOp::kAllReduce, pass.bytes_per_token * tokens,
                             tp_.group, OpCategory::kTp, Streams::kTp, {last});
      }
    }
  }
  return last;
}

void LayerOps::cross_entropy_backward(const Deps& deps) {
  const double logits = static_cast<double>(output_shape().m * output_shape().n);
  Deps after = deps;
  for (const LogitPass& pass : cross_entropy_kernels(dims_.cross_entropy).backward) {
    after = {emit_.memory_bound("cross-entropy " + std::string(pass.name) + " bwd",
                                pass.bytes_per_logit * logits, after)};
  }
}

OpIndex LayerOps::output_backward(std::int64_t microbatch, const Deps& deps,
                                  std::vector<GradReady>& grads) {
  tag(microbatch, std::nullopt, "output");
  cross_entropy_backward(deps);
  // The weight-gradient placeholder of Megatron's output layer lives through its backward.
  emit_.allocate_on_next(memory_.output_placeholder_bytes);
  const LinearBackward linear = output_linear_.column_backward("linear", output_shape());
  emit_.free_on_next_in_backward(memory_.output_bytes + memory_.output_placeholder_bytes);
  const OpIndex norm =
      emit_.memory_bound("final norm bwd", norm_backward_bytes(), {linear.grad_input});
  if (holds_output_weights_) {
    grads.push_back({static_cast<double>(output_shape().n * output_shape().k), linear.wgrad});
  }
  grads.push_back({dims_.norm_params, norm});
  return norm;
}

std::vector<ParamUnit> LayerOps::embedding_units() const {
  return {{static_cast<double>(output_shape().n * output_shape().k), kEmbeddingModule}};
}

std::vector<ParamUnit> LayerOps::output_units() const {
  std::vector<ParamUnit> units;
  if (holds_output_weights_) {
    units.push_back({static_cast<double>(output_shape().n * output_shape().k), kOutputModule});
  }
  units.push_back({dims_.norm_params, kOutputModule});
  return units;
}

// The projection of [h_L; embedding of the next tokens] (2h) back to h, ÷ tp like a column linear.
GemmShape LayerOps::mtp_projection_shape() const {
  return {dims_.tokens(), dims_.hidden / dims_.tp, 2 * dims_.hidden};
}

OpIndex LayerOps::mtp_forward(std::int64_t microbatch, const Deps& deps) {
  OpIndex last = 0;
  Deps input = deps;
  for (std::int64_t m = 0; m < dims_.mtp_layers; ++m) {
    tag(microbatch, std::nullopt, "mtp" + std::to_string(m));
    emit_.memory_bound("norms fwd", 2.0 * norm_forward_bytes(), input);
    emit_.gemm("projection fwd", mtp_projection_shape());
    last = forward(microbatch, dims_.layers + m, {});
    tag(microbatch, std::nullopt, "mtp" + std::to_string(m));
    emit_.memory_bound("final norm fwd", norm_forward_bytes());
    last = cross_entropy_forward(output_linear_.column_forward("linear", output_shape()));
    input = {last};
  }
  return last;
}

OpIndex LayerOps::mtp_backward(std::int64_t microbatch, const Deps& deps,
                               std::vector<GradReady>& grads) {
  Deps input = deps;
  for (std::int64_t m = dims_.mtp_layers; m-- > 0;) {
    tag(microbatch, std::nullopt, "mtp" + std::to_string(m));
    cross_entropy_backward(input);
    // Its output-head gradient adds to the shared output weights' (counted with them).
    const LinearBackward head = output_linear_.column_backward("linear", output_shape());
    emit_.memory_bound("final norm bwd", norm_backward_bytes(), {head.grad_input});
    const OpIndex layer = backward(microbatch, dims_.layers + m, {}, grads);
    tag(microbatch, std::nullopt, "mtp" + std::to_string(m));
    const GemmShape p = mtp_projection_shape();
    emit_.gemm("projection dgrad", {p.m, p.k, p.n}, {layer});
    const OpIndex wgrad = emit_.wgrad("projection wgrad", {p.k, p.n, p.m});
    const OpIndex norms = emit_.memory_bound("norms bwd", 2.0 * norm_backward_bytes());
    grads.push_back({static_cast<double>(p.n * p.k), wgrad});
    grads.push_back({2.0 * dims_.norm_params, norms});
    input = {norms};
  }
  return input.front();
}

std::vector<ParamUnit> LayerOps::mtp_units() const {
  std::vector<ParamUnit> units;
  for (std::int64_t m = dims_.mtp_layers; m-- > 0;) {
    const std::int64_t layer = dims_.layers + m;
    const auto decoder = layer_units(layer);
    units.insert(units.end(), decoder.begin(), decoder.end());
    const GemmShape p = mtp_projection_shape();
    units.push_back({static_cast<double>(p.n * p.k), layer});
    units.push_back({2.0 * dims_.norm_params, layer});
  }
  return units;
}

}  // namespace wallsim::models
