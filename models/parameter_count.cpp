#include "models/parameter_count.hpp"

namespace wallsim::models {

double norm_params_per_element(Norm norm) {
  return norm == Norm::rmsnorm ? 1.0 : 2.0;
}

LayerParameters layer_parameters(const ModelSpec& model) {
  const auto h = static_cast<double>(model.hidden);
  const auto query_width = static_cast<double>(model.heads * model.head_dim);
  const double group_ratio = static_cast<double>(model.kv_heads) / static_cast<double>(model.heads);
  const double gamma = model.gated() ? 1.5 : 1.0;
  LayerParameters p;
  p.attention = 2.0 * h * query_width * (1.0 + group_ratio);
  p.mlp = 2.0 * h * static_cast<double>(model.ffn_hidden) * gamma;
  p.norms = 2.0 * norm_params_per_element(model.norm) * h;
  return p;
}

double embedding_parameters(const ModelSpec& model, std::int64_t tp) {
  return static_cast<double>(padded_vocab(model.vocab, tp)) * static_cast<double>(model.hidden);
}

double total_parameters(const ModelSpec& model, std::int64_t tp) {
  const double layers = static_cast<double>(model.layers) * layer_parameters(model).total();
  const double final_norm = norm_params_per_element(model.norm) * static_cast<double>(model.hidden);
  const double embeddings = embedding_parameters(model, tp) * (model.tied_embeddings ? 1.0 : 2.0);
  return layers + final_norm + embeddings;
}

}  // namespace wallsim::models
