#include "models/flops.hpp"

namespace wallsim::models {
namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

}  // namespace

double attention_linear_flops_per_token(const ModelSpec& m) {
  const double query = d(m.heads * m.head_dim);
  const double key_value = 2.0 * d(m.kv_heads * m.head_dim);
  return 6.0 * (d(m.hidden) * (query + key_value) + query * d(m.hidden));
}

double attention_core_flops_per_token(const ModelSpec& m, std::int64_t seq_len, bool causal) {
  const double full = 12.0 * d(m.heads * m.head_dim) * d(seq_len);
  return causal ? full / 2.0 : full;
}

double mlp_flops_per_token(const ModelSpec& m) {
  const double phi = m.gated() ? 3.0 : 2.0;
  return 6.0 * d(m.hidden) * phi * d(m.ffn_hidden);
}

double logits_flops_per_token(const ModelSpec& m, std::int64_t tp) {
  return 6.0 * d(m.hidden) * d(padded_vocab(m.vocab, tp));
}

FlopsBreakdown model_flops_breakdown(const ModelSpec& m, std::int64_t seq_len,
                                     std::int64_t global_batch, std::int64_t tp, bool causal) {
  const double tokens = d(global_batch) * d(seq_len);
  const double layers = d(m.layers);
  FlopsBreakdown f;
  f.attention_linear = tokens * layers * attention_linear_flops_per_token(m);
  f.attention_core = tokens * layers * attention_core_flops_per_token(m, seq_len, causal);
  f.mlp = tokens * layers * mlp_flops_per_token(m);
  f.logits = tokens * logits_flops_per_token(m, tp);
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
