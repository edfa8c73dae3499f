// What the per-rank op builders of a step share: the dimensions of one micro-batch on one
// rank, the tensor-parallel setting and the recompute plan, derived once from the RunConfig.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/model_spec.hpp"
#include "models/run_config.hpp"
#include "sim/graph/op.hpp"
#include "sim/hw/kernel_flops.hpp"

namespace wallsim::models {

// One micro-batch on one rank: b sequences of s' = s/cp tokens, the layer widths ÷ tp.
struct LayerDims {
  std::int64_t batch = 1;     // b
  std::int64_t seq = 0;       // s' = seq_len / cp
  std::int64_t full_seq = 0;  // s
  std::int64_t hidden = 0;    // h
  std::int64_t heads = 0;     // a, whole model
  std::int64_t kv_heads = 0;  // g
  std::int64_t head_dim = 0;  // d
  std::int64_t ffn = 0;       // f
  std::int64_t vocab = 0;     // padded for tp
  double norm_params = 0;     // ν·h: parameters of one norm (ν = 2 for LayerNorm)
  std::int64_t tp = 1;
  std::int64_t cp = 1;
  bool gated = false;  // SwiGLU: FC1 has two branches
  bool sequence_parallel = false;
  bool dropout = false;
  bool attention_dropout = false;
  std::optional<MlaSpec> mla;  // multi-head latent attention instead of Q, K, V projections
  std::int64_t layers = 0;     // decoder layers L; MTP layers are indexed L, L + 1, ...
  std::int64_t mtp_layers = 0;
  CrossEntropyFusion cross_entropy = CrossEntropyFusion::kNone;
  double main_grad_bytes = 4;   // per parameter of the gradient buffer (training.grad_reduce_dtype)
  bool flash_attention = true;  // false: Megatron's unfused core attention (two batched GEMMs,
                                // a fused scale-mask-softmax and dropout over the s² scores)

  std::int64_t tokens() const { return batch * seq; }
  // Elements of a [s', b, h] activation, and of its sequence shard between TP regions.
  double hidden_elements() const;
  double sharded_hidden_elements() const;
  // Bytes of the [s', b, h] bf16 tensor every TP collective of a layer moves (nccl-tests S).
  double tp_collective_bytes() const { return 2.0 * hidden_elements(); }
  // Per-rank GEMM widths.
  std::int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim / tp; }
  std::int64_t attention_width() const { return heads * head_dim / tp; }
  std::int64_t fc1_width() const { return (gated ? 2 : 1) * ffn / tp; }
  std::int64_t fc2_input_width() const { return ffn / tp; }
  // The attention calls of one layer's forward (or backward) on this rank without context
  // parallelism.
  std::vector<AttentionShape> attention_calls() const;
};

struct TpSetting {
  bool active = false;  // tp > 1
  GroupIndex group = 0;
  bool sequence_parallel = false;
  bool overlap = false;  // Transformer Engine's userbuffer overlap (needs SP)
  std::int64_t tp = 1;
};

struct RecomputePlan {
  Recompute mode = Recompute::none;
  bool core_attention = false;  // selective: core_attn
  bool mlp = false;             // selective: mlp
  bool norms = false;           // selective: layernorm
  bool moe = false;             // selective: moe (the whole MoE layer, exchanges included)
  bool moe_act = false;         // selective: moe_act (the experts' activation)
  bool mla_up_proj = false;     // selective: mla_up_proj (MLA's up-projections)
};

// Parameters of one tensor, or of a fused group, whose gradient becomes ready at one op.
struct ParamUnit {
  double params = 0;        // per GPU
  std::int64_t module = 0;  // layer index; kEmbeddingModule / kOutputModule otherwise
  bool expert = false;      // routed-expert weights: reduced over expert DP
};
inline constexpr std::int64_t kEmbeddingModule = -1;
inline constexpr std::int64_t kOutputModule = -2;

struct GradReady {
  double params = 0;
  OpIndex op = 0;  // the op after which the gradient is complete
};

LayerDims layer_dims(const RunConfig& config);
RecomputePlan recompute_plan(const TrainingSpec& training);

}  // namespace wallsim::models
