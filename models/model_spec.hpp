// The shape of a decoder-only transformer: GPT- or Llama-style dense layers, optionally with
// mixture-of-experts FFNs (Mixtral, Qwen3-MoE, DeepSeek-V3), multi-head latent attention
// (DeepSeek-V2/V3) and multi-token-prediction layers (DeepSeek-V3).
//
// A model is given either in wallsim's own format (configs/models/*.json; keys in
// models/README.md) or as a Hugging Face `config.json` (Llama, Mixtral, Qwen3-MoE and
// DeepSeek-V3 keys). Both parse into the same immutable ModelSpec. Parameter counts follow
// Megatron-LM's estimator (docs/reference/megatron_formulas.md §1): linear biases and learned
// position embeddings are not counted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wallsim {

class JsonNode;

namespace models {

enum class Activation { gelu, swiglu, squared_relu };
enum class Norm { layernorm, rmsnorm };

const char* to_string(Activation activation);
const char* to_string(Norm norm);

// How unevenly the router spreads tokens over the experts: uniform (every expert its share, as
// force-balanced benchmarks run), a skew x (expert i's load ∝ (i + 1)^−x, normalised), or an
// explicit relative load per expert.
struct RouterImbalance {
  enum class Kind { uniform, skew, loads };
  Kind kind = Kind::uniform;
  double skew = 0;
  std::vector<double> loads;  // kind loads: one per expert, relative
};

// Each expert's share of the routed tokens (sums to 1): 1/E each when uniform,
// (i + 1)^−skew / Σ_j (j + 1)^−skew with a skew, loads_i / Σ loads with explicit loads.
std::vector<double> expert_load_shares(const RouterImbalance& imbalance, std::int64_t experts);

// Mixture-of-experts FFN (Megatron-Core MoE): `experts` routed experts of width `ffn_hidden`
// (per branch with SwiGLU), `topk` of them per token, plus shared experts of total width
// `shared_ffn_hidden` that every token goes through.
struct MoeSpec {
  std::int64_t experts = 0;
  std::int64_t topk = 0;
  std::int64_t ffn_hidden = 0;             // per routed expert
  std::int64_t shared_ffn_hidden = 0;      // total width of the shared experts; 0 = none
  std::int64_t layer_freq = 1;             // every layer_freq-th layer is MoE (layer % freq == 0)
  std::int64_t first_dense_layers = 0;     // the first K layers are dense
  std::string score_function = "softmax";  // softmax | sigmoid
  std::optional<double> capacity_factor;   // none: dropless
  // Megatron-Core's --moe-router-fusion: the router's score, top-k and aux-loss kernels fused
  // (31 kernels per forward instead of 72; docs/reference/moe.md).
  bool router_fusion = false;
  // Group-limited routing (DeepSeek-V2/V3; Megatron-Core's --moe-router-num-groups and
  // --moe-router-group-topk): the experts form `router_groups` equal groups of consecutive
  // experts, and each token's top-k are chosen within its `router_group_topk` best groups, so
  // with one group per node a token reaches at most that many nodes. 0 and 0: not limited.
  std::int64_t router_groups = 0;
  std::int64_t router_group_topk = 0;
  RouterImbalance imbalance;

  bool is_moe_layer(std::int64_t layer) const {
    return layer >= first_dense_layers && (layer - first_dense_layers) % layer_freq == 0;
  }
};

// Multi-head latent attention (DeepSeek-V2/V3): queries through a rank-q_lora_rank bottleneck
// (none: a plain projection), keys and values through a shared rank-kv_lora_rank latent;
// per head qk_head_dim (no RoPE) + qk_rope_head_dim for Q·K and v_head_dim for V.
struct MlaSpec {
  std::optional<std::int64_t> q_lora_rank;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
};

struct ModelSpec {
  std::string name;
  std::string source;           // where the shape comes from (paper, model card, config)
  std::int64_t layers = 0;      // transformer layers L
  std::int64_t hidden = 0;      // h
  std::int64_t ffn_hidden = 0;  // f: width of the FFN (per branch for SwiGLU)
  std::int64_t heads = 0;       // n: query heads
  std::int64_t kv_heads = 0;    // g: key/value heads (query groups); = heads without GQA
  std::int64_t head_dim = 0;    // d: kv_channels; default hidden / heads (MLA: qk + rope dims)
  std::int64_t vocab = 0;       // unpadded vocabulary
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool tied_embeddings = true;
  double hidden_dropout = 0;     // probability; > 0 stores 1-byte dropout masks
  double attention_dropout = 0;  // probability; > 0 stores the attention-dropout mask
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  std::int64_t mtp_layers = 0;  // multi-token-prediction modules after the last layer

  bool gated() const { return activation == Activation::swiglu; }
  bool is_moe() const { return moe.has_value(); }
  bool is_moe_layer(std::int64_t layer) const { return moe && moe->is_moe_layer(layer); }
  // MTP layers are typed like the last decoder layer (Megatron; megatron_formulas.md §0).
  bool mtp_is_moe() const { return is_moe_layer(layers - 1); }
  // L_m: MoE layers among the L decoder layers (MTP layers not included).
  std::int64_t moe_layer_count() const;
};

// Parses wallsim's model format (keys in models/README.md). Unknown keys are rejected; errors
// name the JSON path (e.g. "moe.topk = 9: must be at most moe.experts (8)").
ModelSpec parse_model_spec(const JsonNode& node);

// Megatron's padded vocabulary: ceil(vocab / (128·tp))·(128·tp) (`make_vocab_size_divisible_by`
// = 128, times the tensor-parallel size; megatron_formulas.md §0).
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp);

}  // namespace models
}  // namespace wallsim
