// The shape of a dense decoder-only transformer (GPT-style or Llama-style).
//
// A model is given either in wallsim's own format (configs/models/*.json; keys in
// models/README.md) or as a Hugging Face `config.json` with Llama-style keys. Both parse into the
// same immutable ModelSpec. Parameter counts follow Megatron-LM's estimator
// (shared/reference/megatron_formulas.md §1): linear biases and learned position embeddings are
// not counted.
#pragma once

#include <cstdint>
#include <string>

namespace wallsim {

class JsonNode;

namespace models {

enum class Activation { gelu, swiglu, squared_relu };
enum class Norm { layernorm, rmsnorm };

const char* to_string(Activation activation);
const char* to_string(Norm norm);

struct ModelSpec {
  std::string name;
  std::string source;           // where the shape comes from (paper, model card, config)
  std::int64_t layers = 0;      // transformer layers L
  std::int64_t hidden = 0;      // h
  std::int64_t ffn_hidden = 0;  // f: width of the FFN (per branch for SwiGLU)
  std::int64_t heads = 0;       // n: query heads
  std::int64_t kv_heads = 0;    // g: key/value heads (query groups); = heads without GQA
  std::int64_t head_dim = 0;    // d: kv_channels; default hidden / heads
  std::int64_t vocab = 0;       // unpadded vocabulary
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool tied_embeddings = true;
  double hidden_dropout = 0;     // probability; > 0 stores 1-byte dropout masks
  double attention_dropout = 0;  // probability; > 0 stores the attention-dropout mask

  bool gated() const { return activation == Activation::swiglu; }
};

// Parses wallsim's model format. `moe`, `mla` and `mtp_layers` are recognised and rejected
// ("not supported yet"). Unknown keys are rejected.
ModelSpec parse_model_spec(const JsonNode& node);

// Megatron's padded vocabulary: ceil(vocab / (128·tp))·(128·tp) (`make_vocab_size_divisible_by`
// = 128, times the tensor-parallel size; megatron_formulas.md §0).
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp);

}  // namespace models
}  // namespace wallsim
