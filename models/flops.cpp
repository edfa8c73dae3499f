#include "models/flops.hpp"

namespace wallsim::models {
namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

double mla_linear_flops_per_token(const ModelSpec& m, const MlaSpec& mla) {
  const double h = d(m.hidden);
  const double n = d(m.heads);
  const double qk = d(mla.qk_head_dim + mla.qk_rope_head_dim);
  const double query = mla.q_lora_rank ? d(*mla.q_lora_rank) * (h + n * qk + 1.0) : h * n * qk;
  const double key_value =
      d(mla.kv_lora_rank) * (h + n * d(mla.qk_head_dim + mla.v_head_dim) + 1.0) +
      h * d(mla.qk_rope_head_dim);
  return 6.0 * (query + key_value + n * d(mla.v_head_dim) * h);
}

double ffn_flops_per_token(const ModelSpec& m, std::int64_t width) {
  const double phi = m.gated() ? 3.0 : 2.0;
  return 6.0 * d(m.hidden) * phi * d(width);
}

// L_m + M_m: MoE layers among the decoder and MTP layers.
double moe_layers_with_mtp(const ModelSpec& m) {
  return d(m.moe_layer_count() + (m.mtp_is_moe() ? m.mtp_layers : 0));
}

}  // namespace

double attention_linear_flops_per_token(const ModelSpec& m) {
  if (m.mla) return mla_linear_flops_per_token(m, *m.mla);
  const double query = d(m.heads * m.head_dim);
  const double key_value = 2.0 * d(m.kv_heads * m.head_dim);
  return 6.0 * (d(m.hidden) * (query + key_value) + query * d(m.hidden));
}

// QKᵀ over the query/key width and A·V over the value width, 2 FLOPs per MAC, three passes:
// 6·n·(d_q + d_v)·s, halved for the causal mask. MHA/GQA: d_q = d_v = d; MLA: d_qk + d_r, d_v.
double attention_core_flops_per_token(const ModelSpec& m, std::int64_t seq_len, bool causal) {
  const double per_head = m.mla
                              ? d(m.mla->qk_head_dim + m.mla->qk_rope_head_dim + m.mla->v_head_dim)
                              : 2.0 * d(m.head_dim);
  const double full = 6.0 * d(m.heads) * per_head * d(seq_len);
  return causal ? full / 2.0 : full;
}

double mlp_flops_per_token(const ModelSpec& m) {
  return ffn_flops_per_token(m, m.ffn_hidden);
}

double routed_experts_flops_per_token(const ModelSpec& m) {
  return m.moe ? ffn_flops_per_token(m, m.moe->ffn_hidden) * d(m.moe->topk) : 0.0;
}

double moe_mlp_flops_per_token(const ModelSpec& m) {
  if (!m.moe) return 0.0;
  return routed_experts_flops_per_token(m) + ffn_flops_per_token(m, m.moe->shared_ffn_hidden);
}

double layer_mlp_flops_per_token(const ModelSpec& m, std::int64_t layer) {
  return m.is_moe_layer(layer) ? moe_mlp_flops_per_token(m) : mlp_flops_per_token(m);
}

double mtp_projection_flops_per_token(const ModelSpec& m) {
  const double h = d(m.hidden);
  return 6.0 * (3.0 * h + 2.0 * h * h);
}

double logits_flops_per_token(const ModelSpec& m, std::int64_t tp) {
  return 6.0 * d(m.hidden) * d(padded_vocab(m.vocab, tp));
}

FlopsBreakdown model_flops_breakdown(const ModelSpec& m, std::int64_t seq_len,
                                     std::int64_t global_batch, std::int64_t tp, bool causal) {
  const double tokens = d(global_batch) * d(seq_len);
  const double layers = d(m.layers + m.mtp_layers);
  FlopsBreakdown f;
  f.attention_linear = tokens * layers * attention_linear_flops_per_token(m);
  f.attention_core = tokens * layers * attention_core_flops_per_token(m, seq_len, causal);
  const double moe_layers = moe_layers_with_mtp(m);
  f.mlp = tokens * (layers - moe_layers) * mlp_flops_per_token(m) +
          tokens * moe_layers * moe_mlp_flops_per_token(m);
  f.routed_experts = tokens * moe_layers * routed_experts_flops_per_token(m);
  f.logits = tokens * d(1 + m.mtp_layers) * logits_flops_per_token(m, tp);
  f.mtp_projection = tokens * d(m.mtp_layers) * mtp_projection_flops_per_token(m);
  return f;
}

double model_flops_per_iteration(const ModelSpec& m, std::int64_t seq_len,
                                 std::int64_t global_batch, std::int64_t tp) {
  return model_flops_breakdown(m, seq_len, global_batch, tp).total();
}

double recompute_flops_per_iteration(const ModelSpec& m, const TrainingSpec& t, std::int64_t tp) {
  const FlopsBreakdown f = model_flops_breakdown(m, t.seq_len, t.global_batch, tp);
  // A forward pass is one third of forward + backward.
  switch (t.recompute) {
    case Recompute::full:
      return (f.attention_linear + f.attention_core + f.mlp) / 3.0;
    case Recompute::selective:
      return ((t.recomputes("core_attn") ? f.attention_core : 0.0) +
              (t.recomputes("mlp") ? f.mlp : 0.0)) /
             3.0;
    case Recompute::none:
      break;
  }
  return 0.0;
}

IterationFlops iteration_flops(const ModelSpec& m, const TrainingSpec& t, std::int64_t tp,
                               std::int64_t num_gpus) {
  IterationFlops r;
  r.tokens = d(t.global_batch) * d(t.seq_len);
  r.model = model_flops_breakdown(m, t.seq_len, t.global_batch, tp);
  r.model_per_iteration = r.model.total();
  r.recompute_per_iteration = recompute_flops_per_iteration(m, t, tp);
  r.hardware_per_iteration = r.model_per_iteration + r.recompute_per_iteration;
  r.model_per_token = r.model_per_iteration / r.tokens;
  r.hardware_per_token = r.hardware_per_iteration / r.tokens;
  r.model_per_gpu = r.model_per_iteration / d(num_gpus);
  r.hardware_per_gpu = r.hardware_per_iteration / d(num_gpus);
  return r;
}

}  // namespace wallsim::models
