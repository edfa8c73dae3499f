#include "models/parameter_count.hpp"

namespace wallsim::models {
namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

double mla_parameters(const ModelSpec& model, const MlaSpec& mla) {
  const double h = d(model.hidden);
  const double n = d(model.heads);
  const double nu = norm_params_per_element(model.norm);
  const double qk = d(mla.qk_head_dim + mla.qk_rope_head_dim);
  const double query = mla.q_lora_rank ? d(*mla.q_lora_rank) * (h + n * qk + nu) : h * n * qk;
  const double key_value =
      d(mla.kv_lora_rank) * (h + n * d(mla.qk_head_dim + mla.v_head_dim) + nu) +
      h * d(mla.qk_rope_head_dim);
  const double output = n * d(mla.v_head_dim) * h;
  return query + key_value + output;
}

double mlp_parameters(const ModelSpec& model, std::int64_t width) {
  return 2.0 * d(model.hidden) * d(width) * (model.gated() ? 1.5 : 1.0);
}

LayerParameters moe_layer_parameters(const ModelSpec& model) {
  const MoeSpec& moe = *model.moe;
  LayerParameters p = layer_parameters(model);
  const double expert = mlp_parameters(model, moe.ffn_hidden);
  p.mlp = mlp_parameters(model, moe.shared_ffn_hidden);
  p.router = d(model.hidden) * d(moe.experts);
  p.experts = expert * d(moe.experts);
  p.active_experts = expert * d(moe.topk);
  return p;
}

// N over all layers; `active` picks N_active's routed experts.
double counted_parameters(const ModelSpec& model, std::int64_t tp, bool active) {
  auto count = [active](const LayerParameters& p) { return active ? p.active() : p.total(); };
  double layers = 0;
  for (std::int64_t layer = 0; layer < model.layers; ++layer) {
    layers += count(layer_parameters(model, layer));
  }
  const double mtp = d(model.mtp_layers) * count(mtp_layer_parameters(model));
  const double final_norm = norm_params_per_element(model.norm) * d(model.hidden);
  const double embeddings = embedding_parameters(model, tp) * (model.tied_embeddings ? 1.0 : 2.0);
  return layers + mtp + final_norm + embeddings;
}

}  // namespace

double norm_params_per_element(Norm norm) {
  return norm == Norm::rmsnorm ? 1.0 : 2.0;
}

double attention_parameters(const ModelSpec& model) {
  if (model.mla) return mla_parameters(model, *model.mla);
  const double query_width = d(model.heads * model.head_dim);
  const double group_ratio = d(model.kv_heads) / d(model.heads);
  return 2.0 * d(model.hidden) * query_width * (1.0 + group_ratio);
}

LayerParameters layer_parameters(const ModelSpec& model) {
  LayerParameters p;
  p.attention = attention_parameters(model);
  p.mlp = mlp_parameters(model, model.ffn_hidden);
  p.norms = 2.0 * norm_params_per_element(model.norm) * d(model.hidden);
  return p;
}

LayerParameters layer_parameters(const ModelSpec& model, std::int64_t layer) {
  return model.is_moe_layer(layer) ? moe_layer_parameters(model) : layer_parameters(model);
}

LayerParameters mtp_layer_parameters(const ModelSpec& model) {
  return layer_parameters(model, model.layers - 1);
}

double embedding_parameters(const ModelSpec& model, std::int64_t tp) {
  return d(padded_vocab(model.vocab, tp)) * d(model.hidden);
}

double total_parameters(const ModelSpec& model, std::int64_t tp) {
  return counted_parameters(model, tp, false);
}

double active_parameters(const ModelSpec& model, std::int64_t tp) {
  return counted_parameters(model, tp, true);
}

}  // namespace wallsim::models
