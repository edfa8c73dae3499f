#include "models/step/layer_ops.hpp"

#include <string>

namespace wallsim::models {
namespace {

TpSetting without_overlap(TpSetting tp) {
  tp.overlap = false;
  return tp;
}

}  // namespace

LayerOps::LayerOps(OpEmitter& emit, const LayerDims& dims, const TpSetting& tp, const CpSetting& cp,
                   const RecomputePlan& recompute, const LayerMemory& memory,
                   bool holds_output_weights, const std::optional<MoeSpec>& moe,
                   const MoeSetting& moe_setting)
    : emit_(emit),
      dims_(dims),
      tp_(tp),
      cp_(cp),
      recompute_(recompute),
      memory_(memory),
      holds_output_weights_(holds_output_weights),
      linear_(emit, tp, dims.tp_collective_bytes()),
      output_linear_(emit, without_overlap(tp), dims.tp_collective_bytes()),
      cp_attention_(emit, dims, cp),
      moe_(moe) {
  if (moe_) moe_ops_.emplace(emit, dims, *moe_, moe_setting, linear_);
}

void LayerOps::tag(std::int64_t microbatch, std::optional<std::int64_t> layer,
                   const std::string& prefix, bool recompute) {
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  if (layer) t.layer = static_cast<std::int32_t>(*layer);
  t.prefix = prefix;
  t.recompute = recompute;
  emit_.set_tag(std::move(t));
}

// With MLA (Megatron's MLASelfAttention) the first linear is the q down-projection (or the
// whole q projection without q-LoRA); the kv down-projection and the up-projections (÷ t over
// heads) follow as plain GEMMs on the gathered tokens.
GemmShape LayerOps::qkv_shape() const {
  if (const auto& m = dims_.mla) {
    const std::int64_t q_width = dims_.heads * (m->qk_head_dim + m->qk_rope_head_dim);
    if (m->q_lora_rank) return {dims_.tokens(), *m->q_lora_rank, dims_.hidden};
    return {dims_.tokens(), q_width / dims_.tp, dims_.hidden};
  }
  return {dims_.tokens(), dims_.qkv_width(), dims_.hidden};
}
std::vector<std::pair<std::string, GemmShape>> LayerOps::mla_shapes() const {
  std::vector<std::pair<std::string, GemmShape>> shapes;
  const auto& m = dims_.mla;
  if (!m) return shapes;
  const std::int64_t t = dims_.tokens(), heads = dims_.heads / dims_.tp;
  if (m->q_lora_rank) {
    shapes.push_back(
        {"q up", {t, heads * (m->qk_head_dim + m->qk_rope_head_dim), *m->q_lora_rank}});
  }
  shapes.push_back({"kv down", {t, m->kv_lora_rank + m->qk_rope_head_dim, dims_.hidden}});
  shapes.push_back({"kv up", {t, heads * (m->qk_head_dim + m->v_head_dim), m->kv_lora_rank}});
  return shapes;
}
double LayerOps::attention_in_params() const {
  double params = static_cast<double>(qkv_shape().n * qkv_shape().k);
  for (const auto& [name, shape] : mla_shapes()) params += static_cast<double>(shape.n * shape.k);
  return params;
}
GemmShape LayerOps::proj_shape() const {
  if (const auto& m = dims_.mla) {
    return {dims_.tokens(), dims_.hidden, dims_.heads / dims_.tp * m->v_head_dim};
  }
  return {dims_.tokens(), dims_.hidden, dims_.attention_width()};
}
GemmShape LayerOps::fc1_shape() const {
  return {dims_.tokens(), dims_.fc1_width(), dims_.hidden};
}
GemmShape LayerOps::fc2_shape() const {
  return {dims_.tokens(), dims_.hidden, dims_.fc2_input_width()};
}

// Norm forward reads x and writes y, backward reads x and dy and writes dx (hardware.md §6.2).
double LayerOps::norm_forward_bytes() const {
  return 4.0 * dims_.sharded_hidden_elements();
}
double LayerOps::norm_backward_bytes() const {
  return 6.0 * dims_.sharded_hidden_elements();
}
// Fused bias-dropout-add: read the branch and the residual, write the sum (+ a 1-byte mask).
double LayerOps::residual_bytes() const {
  return (dims_.dropout ? 7.0 : 6.0) * dims_.sharded_hidden_elements();
}
// GeLU reads e and writes e; SwiGLU reads two inputs of e and writes e (e: the f/t output).
double LayerOps::activation_forward_bytes() const {
  const double e =
      static_cast<double>(dims_.tokens()) * static_cast<double>(dims_.fc2_input_width());
  return (dims_.gated ? 6.0 : 4.0) * e;
}
double LayerOps::activation_backward_bytes() const {
  const double e =
      static_cast<double>(dims_.tokens()) * static_cast<double>(dims_.fc2_input_width());
  return (dims_.gated ? 10.0 : 6.0) * e;
}

// Megatron's unfused core attention, per call (b sequences, a/t heads): scores S = QKᵀ as a
// batched GEMM, a fused scale-mask-softmax over the b·(a/t)·s_q·s_kv scores (read and write
// 2 bytes each), dropout (read 2, write 2, a 1-byte mask), then O = PV. The whole s² is
// computed: the unfused path does not skip masked blocks. Backward: dV = PᵀdO, dP = dO·Vᵀ,
// dropout and softmax backward (5 and 6 bytes per score), dQ = dS·K, dK = dSᵀQ.
double LayerOps::score_elements(const AttentionShape& call) const {
  return static_cast<double>(call.batch * call.heads) * static_cast<double>(call.seq_q) *
         static_cast<double>(call.seq_kv);
}

Deps LayerOps::core_attention_forward(const Deps& producer) {
  if (cp_.active) return cp_attention_.forward(producer);
  if (dims_.flash_attention) {
    return {emit_.attention("attn fwd", dims_.attention_calls(), /*backward=*/false, producer)};
  }
  for (const AttentionShape& call : dims_.attention_calls()) {
    const std::int64_t bmm_batch = call.batch * call.heads;
    const double scores = score_elements(call);
    emit_.gemm("attn scores fwd", {call.seq_q, call.seq_kv, call.head_dim, bmm_batch});
    emit_.memory_bound("attn softmax fwd", 4.0 * scores);
    if (dims_.attention_dropout) emit_.memory_bound("attn dropout fwd", 5.0 * scores);
    emit_.gemm("attn context fwd", {call.seq_q, call.head_dim, call.seq_kv, bmm_batch});
  }
  return {};
}

Deps LayerOps::core_attention_backward(const Deps& producer) {
  if (cp_.active) return cp_attention_.backward(producer);
  if (dims_.flash_attention) {
    return {emit_.attention("attn bwd", dims_.attention_calls(), /*backward=*/true, producer)};
  }
  for (const AttentionShape& call : dims_.attention_calls()) {
    const std::int64_t bmm_batch = call.batch * call.heads;
    const double scores = score_elements(call);
    emit_.gemm("attn dv", {call.seq_kv, call.head_dim, call.seq_q, bmm_batch});
    emit_.gemm("attn dprobs", {call.seq_q, call.seq_kv, call.head_dim, bmm_batch});
    if (dims_.attention_dropout) emit_.memory_bound("attn dropout bwd", 5.0 * scores);
    emit_.memory_bound("attn softmax bwd", 6.0 * scores);
    emit_.gemm("attn dq", {call.seq_q, call.head_dim, call.seq_kv, bmm_batch});
    emit_.gemm("attn dk", {call.seq_kv, call.head_dim, call.seq_q, bmm_batch});
  }
  return {};
}

// The compute op before this point of the program (what a kernel or a NCCL call issued now
// waits for).
Deps LayerOps::producer() const {
  if (const auto last = emit_.last_compute()) return {*last};
  return {};
}

// ln1, attention, residual and ln2: returns ln2.
OpIndex LayerOps::attention_block_forward(const Deps& deps) {
  emit_.memory_bound("ln1 fwd", norm_forward_bytes(), deps);
  linear_.column_forward("qkv", qkv_shape());
  for (const auto& [name, shape] : mla_shapes()) emit_.gemm(name + " fwd", shape);
  const Deps attention = core_attention_forward(producer());
  const OpIndex proj = linear_.row_forward("proj", proj_shape(), attention);
  emit_.memory_bound("residual1 fwd", residual_bytes(), {proj});
  return emit_.memory_bound("ln2 fwd", norm_forward_bytes());
}

OpIndex LayerOps::forward_ops(std::int64_t layer, const Deps& deps) {
  const OpIndex ln2 = attention_block_forward(deps);
  if (moe_layer(layer)) {
    const OpIndex moe = moe_ops_->forward({ln2});
    return emit_.memory_bound("residual2 fwd", residual_bytes(), {moe});
  }
  linear_.column_forward("fc1", fc1_shape());
  emit_.memory_bound("act fwd", activation_forward_bytes());
  const OpIndex fc2 = linear_.row_forward("fc2", fc2_shape());
  return emit_.memory_bound("residual2 fwd", residual_bytes(), {fc2});
}

OpIndex LayerOps::forward(std::int64_t microbatch, std::int64_t layer, const Deps& deps) {
  tag(microbatch, layer, "L" + std::to_string(layer));
  emit_.allocate_on_next(moe_layer(layer) ? memory_.moe_layer_bytes : memory_.layer_bytes);
  return forward_ops(layer, deps);
}

bool LayerOps::overlappable(std::int64_t layer) const {
  return moe_layer(layer) && recompute_.mode != Recompute::full && !recompute_.moe;
}

LayerForward LayerOps::forward_begin(std::int64_t microbatch, std::int64_t layer,
                                     const Deps& deps) {
  tag(microbatch, layer, "L" + std::to_string(layer));
  emit_.allocate_on_next(memory_.moe_layer_bytes);
  const OpIndex ln2 = attention_block_forward(deps);
  return {microbatch, layer, moe_ops_->forward_dispatch({ln2})};
}

void LayerOps::forward_experts(LayerForward& state) {
  tag(state.microbatch, state.layer, "L" + std::to_string(state.layer));
  moe_ops_->forward_experts(state.moe);
}

OpIndex LayerOps::forward_end(LayerForward& state) {
  tag(state.microbatch, state.layer, "L" + std::to_string(state.layer));
  const OpIndex moe = moe_ops_->forward_finish(state.moe);
  return emit_.memory_bound("residual2 fwd", residual_bytes(), {moe});
}

LayerBackward LayerOps::backward_begin(std::int64_t microbatch, std::int64_t layer,
                                       const Deps& deps) {
  tag(microbatch, layer, "L" + std::to_string(layer));
  const OpIndex residual = emit_.memory_bound("residual2 bwd", residual_bytes(), deps);
  if (recompute_.norms) {
    tag(microbatch, layer, "L" + std::to_string(layer), /*recompute=*/true);
    emit_.memory_bound("ln2 fwd", norm_forward_bytes());
  }
  tag(microbatch, layer, "L" + std::to_string(layer));
  return {microbatch, layer, moe_ops_->backward_combine({residual})};
}

void LayerOps::backward_experts(LayerBackward& state) {
  tag(state.microbatch, state.layer, "L" + std::to_string(state.layer));
  moe_ops_->backward_experts(state.moe, recompute_.moe_act);
}

OpIndex LayerOps::backward_end(LayerBackward& state, std::vector<GradReady>& grads) {
  tag(state.microbatch, state.layer, "L" + std::to_string(state.layer));
  const OpIndex moe = moe_ops_->backward_finish(state.moe, grads);
  const OpIndex norm = emit_.memory_bound("ln2 bwd", norm_backward_bytes(), {moe});
  grads.push_back({dims_.norm_params, norm});
  return attention_backward(state.layer, grads);
}

OpIndex LayerOps::backward(std::int64_t microbatch, std::int64_t layer, const Deps& deps,
                           std::vector<GradReady>& grads) {
  const std::string prefix = "L" + std::to_string(layer);
  Deps first = deps;
  if (recompute_.mode == Recompute::full) {
    // Megatron's full recompute (uniform, one layer per checkpoint) re-runs the layer's
    // forward, TP collectives included, right before its backward.
    tag(microbatch, layer, prefix, /*recompute=*/true);
    emit_.allocate_on_next(memory_.transient_bytes);
    forward_ops(layer, deps);
    first.clear();
  }
  tag(microbatch, layer, prefix);
  mlp_backward(layer, first, grads);
  return attention_backward(layer, grads);
}

OpIndex LayerOps::mlp_backward(std::int64_t layer, const Deps& deps,
                               std::vector<GradReady>& grads) {
  const OpTag plain = emit_.tag();
  const OpIndex residual = emit_.memory_bound("residual2 bwd", residual_bytes(), deps);
  if (moe_layer(layer)) {
    // Megatron's selective `mlp` recompute covers dense MLPs; MoE layers keep their activations.
    if (recompute_.norms) {
      OpTag again = plain;
      again.recompute = true;
      emit_.set_tag(again);
      emit_.memory_bound("ln2 fwd", norm_forward_bytes());
      emit_.set_tag(plain);
    }
    Deps input{residual};
    if (recompute_.moe) {
      OpTag again = plain;
      again.recompute = true;
      emit_.set_tag(again);
      input.push_back(moe_ops_->forward({residual}));
      emit_.set_tag(plain);
    }
    const OpIndex moe = moe_ops_->backward(input, grads, recompute_.moe_act && !recompute_.moe);
    const OpIndex norm = emit_.memory_bound("ln2 bwd", norm_backward_bytes(), {moe});
    grads.push_back({dims_.norm_params, norm});
    return norm;
  }
  OpTag again = plain;
  again.recompute = true;
  emit_.set_tag(again);
  if (recompute_.mlp) {
    emit_.gemm("fc1 fwd", fc1_shape());
    emit_.memory_bound("act fwd", activation_forward_bytes());
    emit_.gemm("fc2 fwd", fc2_shape());
  }
  if (recompute_.norms) emit_.memory_bound("ln2 fwd", norm_forward_bytes());
  emit_.set_tag(plain);
  const LinearBackward fc2 = linear_.row_backward("fc2", fc2_shape());
  emit_.memory_bound("act bwd", activation_backward_bytes());
  const LinearBackward fc1 = linear_.column_backward("fc1", fc1_shape());
  const OpIndex norm = emit_.memory_bound("ln2 bwd", norm_backward_bytes(), {fc1.grad_input});
  grads.push_back({static_cast<double>(fc2_shape().n * fc2_shape().k), fc2.wgrad});
  grads.push_back({static_cast<double>(fc1_shape().n * fc1_shape().k), fc1.wgrad});
  grads.push_back({dims_.norm_params, norm});
  return norm;
}

OpIndex LayerOps::attention_backward(std::int64_t layer, std::vector<GradReady>& grads) {
  const OpTag plain = emit_.tag();
  OpTag again = plain;
  again.recompute = true;
  emit_.memory_bound("residual1 bwd", residual_bytes());
  if (recompute_.norms) {
    emit_.set_tag(again);
    emit_.memory_bound("ln1 fwd", norm_forward_bytes());
    emit_.set_tag(plain);
  }
  const LinearBackward proj = linear_.row_backward("proj", proj_shape());
  // Attention's backward (and its CP exchange) starts once proj's backward, wgrad included, is
  // done, as autograd runs them.
  Deps input = producer();
  input.push_back(proj.grad_input);
  if (recompute_.core_attention) {
    emit_.set_tag(again);
    const Deps recomputed = core_attention_forward(producer());
    input.insert(input.end(), recomputed.begin(), recomputed.end());
    emit_.set_tag(plain);
  }
  const auto mla = mla_shapes();
  if (recompute_.mla_up_proj) {
    emit_.set_tag(again);
    for (const auto& [name, shape] : mla) {
      if (name != "kv down") emit_.gemm(name + " fwd", shape);
    }
    emit_.set_tag(plain);
  }
  Deps attention = core_attention_backward(input);
  for (auto it = mla.rbegin(); it != mla.rend(); ++it) {
    const GemmShape& f = it->second;
    const OpIndex dgrad = emit_.gemm(it->first + " dgrad", {f.m, f.k, f.n}, attention);
    // Deferred to a W pass (zero-bubble schedules), the weight gradient is a placeholder and
    // the next linear's backward follows the data gradient; qkv's weight gradient, recorded
    // last, carries the block's parameters to the gradient reduction.
    const OpIndex wgrad = emit_.wgrad(it->first + " wgrad", {f.k, f.n, f.m});
    attention = {OpEmitter::is_deferred_placeholder(wgrad) ? dgrad : wgrad};
  }
  const LinearBackward qkv = linear_.column_backward("qkv", qkv_shape(), attention);
  const bool full = recompute_.mode == Recompute::full;
  emit_.free_on_next((moe_layer(layer) ? memory_.moe_layer_bytes : memory_.layer_bytes) +
                     (full ? memory_.transient_bytes : 0.0));
  const OpIndex norm = emit_.memory_bound("ln1 bwd", norm_backward_bytes(), {qkv.grad_input});
  grads.push_back({static_cast<double>(proj_shape().n * proj_shape().k), proj.wgrad});
  grads.push_back({attention_in_params(), qkv.wgrad});
  grads.push_back({dims_.norm_params, norm});
  return norm;
}

std::vector<ParamUnit> LayerOps::layer_units(std::int64_t layer) const {
  const auto weights = [](const GemmShape& s) { return static_cast<double>(s.n * s.k); };
  const std::vector<ParamUnit> attention{
      {weights(proj_shape()), layer}, {attention_in_params(), layer}, {dims_.norm_params, layer}};
  std::vector<ParamUnit> units;
  if (moe_layer(layer)) {
    units = moe_ops_->units(layer);
  } else {
    units = {{weights(fc2_shape()), layer}, {weights(fc1_shape()), layer}};
  }
  units.push_back({dims_.norm_params, layer});
  units.insert(units.end(), attention.begin(), attention.end());
  return units;
}

}  // namespace wallsim::models
