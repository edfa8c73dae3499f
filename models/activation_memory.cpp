#include "models/activation_memory.hpp"

#include <algorithm>
#include <cmath>

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

// The projection's saved input per element: the core attention's bf16 output, which a fused
// kernel keeps for its own backward, and the projection's quantized copy when there is one.
double projection_input_bytes(const ActivationSetting& s) {
  if (!s.quantized_gemm_inputs) return 2.0;
  return (s.flash_attention ? 2.0 : 0.0) + s.gemm_input_bytes;
}

// The core attention's output per element that all-to-all CP keeps besides the projection's
// input: Transformer Engine >= 2.8 saves the head-sharded output before the output all-to-all
// (so the backward exchanges dO alone), while the projection keeps the sequence-sharded output
// after it (2 bytes, bf16). With p2p or all-gather CP, or without CP, the two are one tensor.
double cp_a2a_saved_output_bytes(const ActivationSetting& s) {
  return s.cp_a2a > 1 && s.flash_attention ? 2.0 : 0.0;
}

// Per token, the attention block: [replicated part, TP-sharded part].
struct Split {
  double replicated = 0;
  double sharded = 0;
};

// MLA (Megatron-Core MLASelfAttention): the down-projection outputs (the q latent of width r_q,
// the kv latent r_kv and the shared RoPE key d_r) and the latent-norm outputs that feed the
// up-projections are computed per token like the norms, so they sit with the replicated part;
// per head Q and K are d_qk + d_r wide, V d_v.
Split mla_attention_per_token(const ModelSpec& m, const MlaSpec& mla, const ActivationSetting& s) {
  const double h = d(m.hidden);
  const double n = d(m.heads);
  // Norm outputs feed linear layers: saved as those layers' (possibly quantized) inputs.
  const double norm_outputs = s.recompute_norms ? 0.0 : s.gemm_input_bytes;
  const double q_latent = mla.q_lora_rank ? d(*mla.q_lora_rank) : 0.0;
  const double kv_latent = d(mla.kv_lora_rank);
  Split a;
  a.replicated = 2 * h /* norm input */ + norm_outputs * h /* down-projection input */ +
                 dropout_mask(m) + 2 * q_latent + norm_outputs * q_latent /* q latent */ +
                 2 * (kv_latent + d(mla.qk_rope_head_dim)) +
                 norm_outputs * kv_latent /* kv latent */;
  const double qk = n * d(mla.qk_head_dim + mla.qk_rope_head_dim);
  const double value = n * d(mla.v_head_dim);
  // Recomputing mla_up_proj re-derives Q, K, V from the latents in the backward: not kept.
  const double up_outputs = s.recompute_mla_up_proj ? 0.0 : 1.0;
  a.sharded = up_outputs * (2 * qk + 2 * qk + 2 * value) /* Q, K, V */ +
              projection_input_bytes(s) * value /* projection input */ +
              cp_a2a_saved_output_bytes(s) * value;
  return a;
}

// The s² tensors the core attention keeps without a fused kernel: the softmax output (2 bytes),
// and with attention dropout its mask (1) and output (2), per head.
double attention_scores_per_token(const ModelSpec& m, const ActivationSetting& s) {
  if (s.flash_attention || s.recompute_core_attention) return 0.0;
  const double per_score = m.attention_dropout > 0 ? 5.0 : 2.0;
  return per_score * d(m.heads) * d(s.seq_len) / d(s.cp);
}

Split attention_per_token(const ModelSpec& m, const ActivationSetting& s) {
  if (m.mla) {
    Split a = mla_attention_per_token(m, *m.mla, s);
    a.sharded += attention_scores_per_token(m, s);
    return a;
  }
  const double h = d(m.hidden);
  const double query = d(m.heads * m.head_dim);
  const double key_value = d(m.kv_heads * m.head_dim);
  Split a;
  a.replicated = 2 * h /* norm input */ +
                 (s.recompute_norms ? 0 : s.gemm_input_bytes * h) /* QKV input */ + dropout_mask(m);
  a.sharded = 2 * query + 4 * key_value /* Q, K, V */ +
              projection_input_bytes(s) * query /* projection input */ +
              cp_a2a_saved_output_bytes(s) * query;
  a.sharded += attention_scores_per_token(m, s);
  return a;
}

// The activation and FC2 inputs of an FFN `width` wide (per branch), per token, unsharded.
double ffn_inner_per_token(const ModelSpec& m, const ActivationSetting& s, double width) {
  if (s.recompute_mlp) return 0.0;
  return 2 * width * (m.gated() ? 2 : 1) /* act input */ +
         s.gemm_input_bytes * width /* FC2 input */;
}

// Norm input, FC1 (or router) input and dropout mask: per token, replicated across TP. The
// router's input is the bf16 norm output (`input_bytes` 2); a dense FC1 keeps its GEMM input.
double mlp_replicated_per_token(const ModelSpec& m, const ActivationSetting& s,
                                double input_bytes) {
  const double h = d(m.hidden);
  return 2 * h /* norm input */ + (s.recompute_norms ? 0 : input_bytes * h) /* FC1 input */ +
         dropout_mask(m);
}

Split mlp_per_token(const ModelSpec& m, const ActivationSetting& s) {
  Split a;
  a.replicated = mlp_replicated_per_token(m, s, s.gemm_input_bytes);
  a.sharded = ffn_inner_per_token(m, s, d(m.ffn_hidden));
  return a;
}

// The busiest EP rank's rows relative to an even split: ep · max over EP ranks of the summed
// load shares of the experts it holds (experts placed contiguously, E/ep per rank).
double busiest_ep_rank_factor(const MoeSpec& moe, std::int64_t ep) {
  const std::vector<double> shares = expert_load_shares(moe.imbalance, moe.experts);
  const std::size_t per_rank =
      static_cast<std::size_t>(std::max<std::int64_t>(1, moe.experts / ep));
  double busiest = 0;
  for (std::size_t first = 0; first < shares.size(); first += per_rank) {
    double load = 0;
    for (std::size_t i = first; i < std::min(shares.size(), first + per_rank); ++i)
      load += shares[i];
    busiest = std::max(busiest, load);
  }
  return d(ep) * busiest;
}

// Token copies one GPU dispatches: k per routed token, or with a capacity factor every expert's
// full capacity C = ceil(T·k/E·cf) (pad to capacity, Megatron's
// --moe-pad-expert-input-to-capacity).
double dispatched_rows(const MoeSpec& moe, double routed_tokens) {
  if (!moe.capacity_factor) return d(moe.topk) * routed_tokens;
  const double capacity =
      std::ceil(routed_tokens * d(moe.topk) / d(moe.experts) * *moe.capacity_factor);
  return d(moe.experts) * capacity;
}

// An MoE layer's FFN, bytes per GPU per micro-batch (see the header for the derivation).
double moe_mlp_bytes(const ModelSpec& m, const MoeSpec& moe, const ActivationSetting& s) {
  const double h = d(m.hidden);
  const double routed_tokens = tokens(s) / replicated_divisor(s);
  // Recomputing `moe` checkpoints the whole MoE FFN: only its input (the norm output) is kept.
  if (s.recompute_moe) return routed_tokens * (2 * h /* norm input */ + 2 * h /* MoE input */);
  const double router = 2 * d(moe.experts) /* logits */ + 4 * d(moe.experts) /* fp32 scores */;
  const double source_rows = dispatched_rows(moe, routed_tokens);
  const double balance = moe.capacity_factor ? 1.0 : busiest_ep_rank_factor(moe, s.ep);
  const double expert_rows = d(s.etp) * source_rows * balance;
  const double expert_width = d(moe.ffn_hidden) / d(s.etp);
  double bytes = routed_tokens * (mlp_replicated_per_token(m, s, 2.0) + router);
  bytes += source_rows * ((s.keep_expert_outputs ? 2 * h : 0.0) /* outputs the combine keeps */ +
                          4 /* their probabilities */);
  const double fc2_input_dropped =
      s.recompute_moe_act && !s.recompute_mlp ? s.gemm_input_bytes * expert_width : 0.0;
  bytes += expert_rows * (s.gemm_input_bytes * h /* FC1 input */ +
                          ffn_inner_per_token(m, s, expert_width) - fc2_input_dropped);
  bytes += tokens(s) * ffn_inner_per_token(m, s, d(moe.shared_ffn_hidden)) / d(s.tp);
  if (s.quantized_gemm_inputs && moe.shared_ffn_hidden > 0 && !s.recompute_norms) {
    // The shared experts' FC1 saves its own quantized copy of the norm output.
    bytes += routed_tokens * s.gemm_input_bytes * h;
  }
  return bytes;
}

double full_layer_bytes(const ModelSpec& m, const ActivationSetting& s, bool moe_layer) {
  const Split attention = attention_per_token(m, s);
  const double attention_bytes =
      tokens(s) * (attention.replicated / replicated_divisor(s) + attention.sharded / d(s.tp));
  if (moe_layer) return attention_bytes + moe_mlp_bytes(m, *m.moe, s);
  const Split mlp = mlp_per_token(m, s);
  const double per_token = (attention.replicated + mlp.replicated) / replicated_divisor(s) +
                           (attention.sharded + mlp.sharded) / d(s.tp);
  return tokens(s) * per_token;
}

ActivationSetting without_recompute(ActivationSetting s) {
  s.recompute = Recompute::none;
  s.recompute_core_attention = false;
  s.recompute_mlp = false;
  s.recompute_norms = false;
  s.recompute_moe = false;
  s.recompute_moe_act = false;
  s.recompute_mla_up_proj = false;
  return s;
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
  s.recompute_moe = t.recomputes("moe");
  s.recompute_moe_act = t.recomputes("moe_act");
  s.recompute_mla_up_proj = t.recomputes("mla_up_proj");
  s.keep_expert_outputs = !t.moe_memory_efficient_permutation;
  s.flash_attention = t.flash_attention;
  s.logits_kept_bytes = cross_entropy_kernels(t.cross_entropy_fusion).kept_bytes_per_logit;
  s.quantized_gemm_inputs = t.quantization != Quantization::kNone;
  s.gemm_input_bytes = saved_gemm_input_bytes(t.quantization);
  return s;
}

double saved_gemm_input_bytes(Quantization quantization) {
  switch (quantization) {
    case Quantization::kNone:
      return 2.0;
    case Quantization::kFp8PerTensor:
      return 1.0;  // one FP32 scale per tensor, not counted
    case Quantization::kMxfp8:
      return 1.0 + 1.0 / 32;  // an E8M0 scale per 32 elements
    case Quantization::kNvfp4:
      return 0.5 + 1.0 / 16;  // an E4M3 scale per 16 elements
  }
  return 2.0;
}

double layer_activation_bytes(const ModelSpec& m, const ActivationSetting& s) {
  if (s.recompute == Recompute::full) {
    return tokens(s) * 2.0 * d(m.hidden) / replicated_divisor(s);
  }
  return full_layer_bytes(m, s, false);
}

double layer_activation_bytes(const ModelSpec& m, const ActivationSetting& s, std::int64_t layer) {
  if (!m.is_moe_layer(layer)) return layer_activation_bytes(m, s);
  if (s.recompute == Recompute::full) {
    return tokens(s) * 2.0 * d(m.hidden) / replicated_divisor(s);
  }
  return full_layer_bytes(m, s, true);
}

double layer_recompute_transient_bytes(const ModelSpec& m, const ActivationSetting& s) {
  return full_layer_bytes(m, without_recompute(s), false);
}

double layer_recompute_transient_bytes(const ModelSpec& m, const ActivationSetting& s,
                                       std::int64_t layer) {
  return full_layer_bytes(m, without_recompute(s), m.is_moe_layer(layer));
}

double layer_offload_bytes(const ModelSpec& m, const ActivationSetting& s, std::int64_t layer,
                           const std::vector<std::string>& modules) {
  if (s.recompute == Recompute::full) return 0.0;
  const auto has = [&](const char* name) {
    return std::find(modules.begin(), modules.end(), name) != modules.end();
  };
  const double h = d(m.hidden);
  const double per_replicated = tokens(s) / replicated_divisor(s);
  const double per_sharded = tokens(s) / d(s.tp);
  double bytes = 0;
  if (has("attn_norm")) bytes += per_replicated * 2 * h;
  if (has("qkv_linear") && !s.recompute_norms) bytes += per_replicated * s.gemm_input_bytes * h;
  if (has("mlp_norm")) bytes += per_replicated * 2 * h;
  double query = d(m.heads * m.head_dim);
  double key_value = 2 * d(m.kv_heads * m.head_dim);
  if (m.mla) {
    const double qk = d(m.heads) * d(m.mla->qk_head_dim + m.mla->qk_rope_head_dim);
    const double up = s.recompute_mla_up_proj ? 0.0 : 1.0;
    query = up * qk;
    key_value = up * (qk + d(m.heads) * d(m.mla->v_head_dim));
  }
  if (has("core_attn")) bytes += per_sharded * 2 * (query + key_value);
  if (has("attn_proj")) {
    const double value = m.mla ? d(m.heads) * d(m.mla->v_head_dim) : d(m.heads * m.head_dim);
    bytes += per_sharded * projection_input_bytes(s) * value;
  }
  if (m.is_moe_layer(layer) && !s.recompute_moe) {
    const MoeSpec& moe = *m.moe;
    const double source_rows = dispatched_rows(moe, per_replicated);
    const double balance = moe.capacity_factor ? 1.0 : busiest_ep_rank_factor(moe, s.ep);
    const double expert_rows = d(s.etp) * source_rows * balance;
    const double width = d(moe.ffn_hidden) / d(s.etp);
    if (has("expert_fc1")) bytes += expert_rows * s.gemm_input_bytes * h;
    if (has("moe_act") && !s.recompute_mlp) {
      bytes += expert_rows * 2 * width * (m.gated() ? 2 : 1);
    }
  }
  return bytes;
}

double layer_input_bytes(const ModelSpec& m, const ActivationSetting& s) {
  return tokens(s) / replicated_divisor(s) * 2 * d(m.hidden);
}

double attention_part_bytes(const ModelSpec& m, const ActivationSetting& s, std::int64_t layer) {
  return layer_offload_bytes(m, without_recompute(s), layer,
                             {"attn_norm", "qkv_linear", "core_attn", "attn_proj"});
}

double embedding_activation_bytes(const ModelSpec& m, const ActivationSetting& s) {
  return tokens(s) * (8.0 + dropout_mask(m) / replicated_divisor(s));
}

double output_activation_bytes(const ModelSpec& m, const ActivationSetting& s) {
  const double norm = 4.0 * d(m.hidden) / replicated_divisor(s);
  const double logits = s.logits_kept_bytes * d(padded_vocab(m.vocab, s.tp)) / d(s.tp);
  return tokens(s) * (norm + logits);
}

}  // namespace wallsim::models
