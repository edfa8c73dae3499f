#include "models/model_spec.hpp"

#include <cmath>
#include <numeric>

#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

Activation parse_activation(const std::string& name) {
  if (name == "swiglu") return Activation::swiglu;
  if (name == "squared_relu") return Activation::squared_relu;
  return Activation::gelu;
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
  if (spec.mla && spec.kv_heads != spec.heads) {
    object.at("kv_heads")
        .fail("must equal heads (" + std::to_string(spec.heads) +
              ") with mla: latent attention has no query groups");
  }
  if (auto node = object.find("head_dim")) {
    spec.head_dim = node->as_integer(1);
  } else if (spec.mla) {
    spec.head_dim = spec.mla->qk_head_dim + spec.mla->qk_rope_head_dim;
  } else if (spec.hidden % spec.heads != 0) {
    object.at("heads").fail("must divide hidden (" + std::to_string(spec.hidden) +
                            ") unless head_dim is given");
  } else {
    spec.head_dim = spec.hidden / spec.heads;
  }
}

RouterImbalance parse_imbalance(const JsonNode& node, std::int64_t experts) {
  RouterImbalance imbalance;
  if (node.is_string()) {
    node.as_choice({"uniform"});
    return imbalance;
  }
  if (!node.is_object()) node.fail(R"(must be "uniform", {"skew": x} or {"loads": [...]})");
  JsonObject object(node);
  if (object.has("skew") == object.has("loads")) node.fail("must give exactly one of skew, loads");
  if (object.has("skew")) {
    imbalance.kind = RouterImbalance::Kind::skew;
    imbalance.skew = object.number("skew", 0.0);
  } else {
    imbalance.kind = RouterImbalance::Kind::loads;
    const JsonNode loads = object.at("loads");
    const std::vector<JsonNode> items = loads.as_array();
    if (static_cast<std::int64_t>(items.size()) != experts) {
      loads.fail("must list one load per expert (moe.experts = " + std::to_string(experts) + ")");
    }
    for (const JsonNode& item : items) imbalance.loads.push_back(item.as_positive_number());
  }
  object.finish();
  return imbalance;
}

void read_moe_layers(JsonObject& object, const ModelSpec& spec, MoeSpec& moe) {
  if (object.has("layer_freq") && object.has("first_dense_layers")) {
    object.at("first_dense_layers").fail("give layer_freq or first_dense_layers, not both");
  }
  moe.layer_freq = object.integer_or("layer_freq", 1, 1, spec.layers);
  moe.first_dense_layers = object.integer_or("first_dense_layers", 0, 0, spec.layers - 1);
}

// router_groups and router_group_topk come together; the groups split the experts evenly and
// the chosen groups hold at least topk experts (Megatron-Core's router asserts the same).
void read_router_groups(JsonObject& object, MoeSpec& moe) {
  const bool groups = object.has("router_groups"), group_topk = object.has("router_group_topk");
  if (groups != group_topk) {
    object.at(groups ? "router_groups" : "router_group_topk")
        .fail("give router_groups and router_group_topk together (group-limited routing)");
  }
  if (!groups) return;
  moe.router_groups = object.integer("router_groups", 1);
  if (moe.experts % moe.router_groups != 0) {
    object.at("router_groups")
        .fail("must divide moe.experts (" + std::to_string(moe.experts) + ")");
  }
  moe.router_group_topk = object.integer("router_group_topk", 1);
  if (moe.router_group_topk > moe.router_groups) {
    object.at("router_group_topk")
        .fail("must be at most router_groups (" + std::to_string(moe.router_groups) + ")");
  }
  const std::int64_t reachable = moe.router_group_topk * (moe.experts / moe.router_groups);
  if (reachable < moe.topk) {
    object.at("router_group_topk")
        .fail("its groups hold " + std::to_string(reachable) + " experts, fewer than topk (" +
              std::to_string(moe.topk) + ")");
  }
}

// Megatron's f_e defaults to f (arguments.py); capacity_factor null or absent = dropless.
MoeSpec parse_moe(const JsonNode& node, const ModelSpec& spec) {
  JsonObject object(node);
  MoeSpec moe;
  moe.experts = object.integer("experts", 1);
  moe.topk = object.integer("topk", 1);
  if (moe.topk > moe.experts) {
    object.at("topk").fail("must be at most moe.experts (" + std::to_string(moe.experts) + ")");
  }
  moe.ffn_hidden = object.integer_or("ffn_hidden", spec.ffn_hidden, 1);
  moe.shared_ffn_hidden = object.integer_or("shared_ffn_hidden", 0, 0);
  read_moe_layers(object, spec, moe);
  moe.score_function = object.choice_or("score_function", "softmax", {"softmax", "sigmoid"});
  if (auto factor = object.find("capacity_factor"); factor && !factor->is_null()) {
    moe.capacity_factor = factor->as_positive_number();
  }
  moe.router_fusion = object.boolean_or("router_fusion", false);
  read_router_groups(object, moe);
  if (auto imbalance = object.find("router_imbalance")) {
    moe.imbalance = parse_imbalance(*imbalance, moe.experts);
  }
  object.finish();
  return moe;
}

MlaSpec parse_mla(const JsonNode& node) {
  JsonObject object(node);
  MlaSpec mla;
  if (auto rank = object.find("q_lora_rank"); rank && !rank->is_null()) {
    mla.q_lora_rank = rank->as_integer(1);
  }
  mla.kv_lora_rank = object.integer("kv_lora_rank", 1);
  mla.qk_head_dim = object.integer("qk_head_dim", 1);
  mla.qk_rope_head_dim = object.integer("qk_rope_head_dim", 0);
  mla.v_head_dim = object.integer("v_head_dim", 1);
  object.finish();
  return mla;
}

}  // namespace

std::vector<double> expert_load_shares(const RouterImbalance& imbalance, std::int64_t experts) {
  std::vector<double> shares(static_cast<std::size_t>(experts), 1.0);
  if (imbalance.kind == RouterImbalance::Kind::loads) shares = imbalance.loads;
  if (imbalance.kind == RouterImbalance::Kind::skew) {
    for (std::size_t i = 0; i < shares.size(); ++i) {
      shares[i] = std::pow(static_cast<double>(i + 1), -imbalance.skew);
    }
  }
  const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
  for (double& share : shares) share /= sum;
  return shares;
}

std::int64_t ModelSpec::moe_layer_count() const {
  std::int64_t count = 0;
  for (std::int64_t layer = 0; layer < layers; ++layer) count += is_moe_layer(layer) ? 1 : 0;
  return count;
}

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
  ModelSpec spec;
  spec.name = object.string_or("name", "");
  spec.source = object.string_or("source", "");
  spec.layers = object.integer("layers", 1);
  spec.hidden = object.integer("hidden", 1);
  spec.activation =
      parse_activation(object.choice_or("activation", "gelu", {"gelu", "swiglu", "squared_relu"}));
  spec.ffn_hidden =
      object.integer_or("ffn_hidden", default_ffn_hidden(spec.hidden, spec.activation), 1);
  if (auto mla = object.find("mla")) spec.mla = parse_mla(*mla);
  read_heads(object, spec);
  if (auto moe = object.find("moe")) spec.moe = parse_moe(*moe, spec);
  spec.mtp_layers = object.integer_or("mtp_layers", 0, 0);
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
