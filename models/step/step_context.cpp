#include "models/step/step_context.hpp"

#include "models/parameter_count.hpp"

namespace wallsim::models {

double LayerDims::hidden_elements() const {
  return static_cast<double>(tokens()) * static_cast<double>(hidden);
}

double LayerDims::sharded_hidden_elements() const {
  return hidden_elements() / (sequence_parallel ? static_cast<double>(tp) : 1.0);
}

// One causal call over the rank's s' queries and keys (context parallelism splits the work
// differently: cp_attention.hpp).
// MLA attends with Q·K over d_qk + d_r and P·V over d_v per head, every head its own K and V:
// one call of head_dim (d_qk + d_r + d_v)/2 has the same FLOPs.
std::vector<AttentionShape> LayerDims::attention_calls() const {
  if (mla) {
    const std::int64_t d = (mla->qk_head_dim + mla->qk_rope_head_dim + mla->v_head_dim) / 2;
    return {{batch, heads / tp, heads / tp, seq, seq, d, /*causal=*/true}};
  }
  return {{batch, heads / tp, kv_heads / tp, seq, seq, head_dim, /*causal=*/true}};
}

LayerDims layer_dims(const RunConfig& config) {
  const ModelSpec& m = config.model;
  const Layout& layout = config.layout;
  LayerDims d;
  d.batch = config.training.micro_batch;
  d.full_seq = config.training.seq_len;
  d.cp = layout.sizes.cp;
  d.seq = d.full_seq / d.cp;
  d.hidden = m.hidden;
  d.heads = m.heads;
  d.kv_heads = m.kv_heads;
  d.head_dim = m.head_dim;
  d.ffn = m.ffn_hidden;
  d.tp = layout.sizes.tp;
  d.vocab = padded_vocab(m.vocab, d.tp);
  d.norm_params = norm_params_per_element(m.norm) * static_cast<double>(m.hidden);
  d.gated = m.gated();
  d.sequence_parallel = layout.sequence_parallel;
  d.dropout = m.hidden_dropout > 0;
  d.attention_dropout = m.attention_dropout > 0;
  d.flash_attention = config.training.flash_attention;
  d.cross_entropy = config.training.cross_entropy_fusion;
  d.main_grad_bytes = dtype_bytes(config.training.grad_reduce_dtype);
  d.mla = m.mla;
  d.layers = m.layers;
  d.mtp_layers = m.mtp_layers;
  return d;
}

RecomputePlan recompute_plan(const TrainingSpec& training) {
  RecomputePlan plan;
  plan.mode = training.recompute;
  if (training.recompute == Recompute::selective) {
    plan.core_attention = training.recomputes("core_attn");
    plan.mlp = training.recomputes("mlp");
    plan.norms = training.recomputes("layernorm");
    plan.moe = training.recomputes("moe");
    plan.moe_act = training.recomputes("moe_act");
    plan.mla_up_proj = training.recomputes("mla_up_proj");
  }
  return plan;
}

}  // namespace wallsim::models
