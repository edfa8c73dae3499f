#include "models/model_spec.hpp"

#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

Activation parse_activation(const std::string& name) {
  if (name == "swiglu") return Activation::swiglu;
  if (name == "squared_relu") return Activation::squared_relu;
  return Activation::gelu;
}

void reject_unsupported(JsonObject& object) {
  for (const char* key : {"moe", "mla", "mtp_layers"}) {
    if (auto node = object.find(key)) {
      node->fail("not supported yet: wallsim models dense decoders only for now");
    }
  }
}

// Megatron's default FFN width (arguments.py): 4h, or floor(8h/3/64)·64 with SwiGLU.
std::int64_t default_ffn_hidden(std::int64_t hidden, Activation activation) {
  if (activation == Activation::swiglu) return (8 * hidden / 3 / 64) * 64;
  return 4 * hidden;
}

void read_heads(JsonObject& object, ModelSpec& spec) {
  spec.heads = object.integer("heads", 1);
  spec.kv_heads = object.integer_or("kv_heads", spec.heads, 1);
  if (spec.heads % spec.kv_heads != 0) {
    object.at("kv_heads").fail("must divide heads (" + std::to_string(spec.heads) + ")");
  }
  if (auto node = object.find("head_dim")) {
    spec.head_dim = node->as_integer(1);
  } else if (spec.hidden % spec.heads != 0) {
    object.at("heads").fail("must divide hidden (" + std::to_string(spec.hidden) +
                            ") unless head_dim is given");
  } else {
    spec.head_dim = spec.hidden / spec.heads;
  }
}

}  // namespace

const char* to_string(Activation activation) {
  switch (activation) {
    case Activation::swiglu:
      return "swiglu";
    case Activation::squared_relu:
      return "squared_relu";
    case Activation::gelu:
      break;
  }
  return "gelu";
}

const char* to_string(Norm norm) {
  return norm == Norm::rmsnorm ? "rmsnorm" : "layernorm";
}

ModelSpec parse_model_spec(const JsonNode& node) {
  JsonObject object(node);
  reject_unsupported(object);
  ModelSpec spec;
  spec.name = object.string_or("name", "");
  spec.source = object.string_or("source", "");
  spec.layers = object.integer("layers", 1);
  spec.hidden = object.integer("hidden", 1);
  spec.activation =
      parse_activation(object.choice_or("activation", "gelu", {"gelu", "swiglu", "squared_relu"}));
  spec.ffn_hidden =
      object.integer_or("ffn_hidden", default_ffn_hidden(spec.hidden, spec.activation), 1);
  read_heads(object, spec);
  spec.vocab = object.integer("vocab", 1);
  spec.norm = object.choice_or("norm", "layernorm", {"layernorm", "rmsnorm"}) == "rmsnorm"
                  ? Norm::rmsnorm
                  : Norm::layernorm;
  spec.tied_embeddings = object.boolean_or("tied_embeddings", true);
  spec.hidden_dropout = object.number_or("hidden_dropout", 0.0, 0.0, 0.999);
  spec.attention_dropout = object.number_or("attention_dropout", 0.0, 0.0, 0.999);
  object.finish();
  return spec;
}

std::int64_t padded_vocab(std::int64_t vocab, std::int64_t tp) {
  const std::int64_t multiple = 128 * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

}  // namespace wallsim::models
