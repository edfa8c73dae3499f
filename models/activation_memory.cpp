#include "models/activation_memory.hpp"

namespace wallsim::models {
namespace {

double d(std::int64_t value) {
  return static_cast<double>(value);
}

// Tokens of one micro-batch on one context-parallel rank.
double tokens(const ActivationSetting& s) {
  return d(s.seq_len) / d(s.cp) * d(s.micro_batch);
}

// Divisor of the tensors TP alone leaves whole: t with sequence parallelism, else 1.
double replicated_divisor(const ActivationSetting& s) {
  return s.sequence_parallel ? d(s.tp) : 1.0;
}

double dropout_mask(const ModelSpec& m) {
  return m.hidden_dropout > 0 ? d(m.hidden) : 0.0;
}

// Per token, the attention block: [replicated part, TP-sharded part].
struct Split {
  double replicated = 0;
  double sharded = 0;
};

Split attention_per_token(const ModelSpec& m, const ActivationSetting& s) {
  const double h = d(m.hidden);
  const double query = d(m.heads * m.head_dim);
  const double key_value = d(m.kv_heads * m.head_dim);
  Split a;
  a.replicated =
      2 * h /* norm input */ + (s.recompute_norms ? 0 : 2 * h) /* QKV input */ + dropout_mask(m);
  a.sharded = 2 * query + 4 * key_value /* Q, K, V */ + 2 * query /* projection input */;
  if (!s.flash_attention && !s.recompute_core_attention) {
    // softmax output (2 bytes), and with attention dropout its mask (1) and output (2)
    const double per_score = m.attention_dropout > 0 ? 5.0 : 2.0;
    a.sharded += per_score * d(m.heads) * d(s.seq_len) / d(s.cp);
  }
  return a;
}

Split mlp_per_token(const ModelSpec& m, const ActivationSetting& s) {
  const double h = d(m.hidden);
  const double f = d(m.ffn_hidden);
  Split a;
  a.replicated =
      2 * h /* norm input */ + (s.recompute_norms ? 0 : 2 * h) /* FC1 input */ + dropout_mask(m);
  if (!s.recompute_mlp) a.sharded = 2 * f * (m.gated() ? 2 : 1) /* act input */ + 2 * f;
  return a;
}

double full_layer_bytes(const ModelSpec& m, const ActivationSetting& s) {
  const Split attention = attention_per_token(m, s);
  const Split mlp = mlp_per_token(m, s);
  const double per_token = (attention.replicated + mlp.replicated) / replicated_divisor(s) +
                           (attention.sharded + mlp.sharded) / d(s.tp);
  return tokens(s) * per_token;
}

}  // namespace

ActivationSetting activation_setting(const TrainingSpec& t, std::int64_t tp, std::int64_t cp,
                                     bool sequence_parallel) {
  ActivationSetting s;
  s.seq_len = t.seq_len;
  s.micro_batch = t.micro_batch;
  s.tp = tp;
  s.cp = cp;
  s.sequence_parallel = sequence_parallel;
  s.recompute = t.recompute;
  s.recompute_core_attention = t.recomputes("core_attn");
  s.recompute_mlp = t.recomputes("mlp");
  s.recompute_norms = t.recomputes("layernorm");
  s.flash_attention = t.flash_attention;
  return s;
}

double layer_activation_bytes(const ModelSpec& m, const ActivationSetting& s) {
  if (s.recompute == Recompute::full) {
    return tokens(s) * 2.0 * d(m.hidden) / replicated_divisor(s);
  }
  return full_layer_bytes(m, s);
}

double layer_recompute_transient_bytes(const ModelSpec& m, const ActivationSetting& s) {
  ActivationSetting everything = s;
  everything.recompute = Recompute::none;
  everything.recompute_core_attention = false;
  everything.recompute_mlp = false;
  everything.recompute_norms = false;
  return full_layer_bytes(m, everything);
}

double embedding_activation_bytes(const ModelSpec& m, const ActivationSetting& s) {
  return tokens(s) * (8.0 + dropout_mask(m) / replicated_divisor(s));
}

double output_activation_bytes(const ModelSpec& m, const ActivationSetting& s) {
  const double norm = 4.0 * d(m.hidden) / replicated_divisor(s);
  const double logits = 4.0 * d(padded_vocab(m.vocab, s.tp)) / d(s.tp);
  return tokens(s) * (norm + logits);
}

}  // namespace wallsim::models
