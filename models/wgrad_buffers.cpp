#include "models/wgrad_buffers.hpp"

#include <set>
#include <utility>

#include "models/parameter_count.hpp"

namespace wallsim::models {
namespace {

constexpr double kParameterBytes = 2.0;  // bf16 parameters (memory.hpp: StaticBytesPerParam)

using Shape = std::pair<std::int64_t, std::int64_t>;  // a weight's [out, in]

void add_attention_shapes(const ModelSpec& model, std::int64_t tp, std::set<Shape>& shapes) {
  const std::int64_t h = model.hidden;
  if (const auto& m = model.mla) {
    // Megatron's MLASelfAttention: the down-projections are replicated over TP, the
    // up-projections and the output projection split by heads.
    const std::int64_t heads = model.heads / tp;
    const std::int64_t q_width = heads * (m->qk_head_dim + m->qk_rope_head_dim);
    if (m->q_lora_rank) {
      shapes.insert({*m->q_lora_rank, h});
      shapes.insert({q_width, *m->q_lora_rank});
    } else {
      shapes.insert({q_width, h});
    }
    shapes.insert({m->kv_lora_rank + m->qk_rope_head_dim, h});
    shapes.insert({heads * (m->qk_head_dim + m->v_head_dim), m->kv_lora_rank});
    shapes.insert({h, heads * m->v_head_dim});
    return;
  }
  shapes.insert({(model.heads + 2 * model.kv_heads) * model.head_dim / tp, h});
  shapes.insert({h, model.heads * model.head_dim / tp});
}

void add_mlp_shapes(const ModelSpec& model, std::int64_t ffn, std::int64_t shards,
                    std::set<Shape>& shapes) {
  if (ffn == 0) return;
  shapes.insert({(model.gated() ? 2 : 1) * ffn / shards, model.hidden});
  shapes.insert({model.hidden, ffn / shards});
}

void add_layer_shapes(const ModelSpec& model, const Layout& layout, std::int64_t layer,
                      std::set<Shape>& shapes) {
  const std::int64_t tp = layout.sizes.tp;
  add_attention_shapes(model, tp, shapes);
  if (!model.is_moe_layer(layer)) {
    add_mlp_shapes(model, model.ffn_hidden, tp, shapes);
    return;
  }
  add_mlp_shapes(model, model.moe->shared_ffn_hidden, tp, shapes);
  add_mlp_shapes(model, model.moe->ffn_hidden, layout.expert.etp, shapes);
}

// One rank's share of the embedding (or output layer) table.
double table_elements(const ModelSpec& model, const Layout& layout) {
  return embedding_parameters(model, layout.sizes.tp) / static_cast<double>(layout.sizes.tp);
}

}  // namespace

double te_wgrad_placeholder_bytes(const ModelSpec& model, const Layout& layout,
                                  std::int64_t stage) {
  std::set<Shape> shapes;
  for (const auto& chunk : layout.placement.stages[static_cast<std::size_t>(stage)].chunks) {
    for (std::int64_t layer = chunk.first_layer; layer < chunk.first_layer + chunk.count; ++layer)
      add_layer_shapes(model, layout, layer, shapes);
  }
  if (layout.holds_output(stage) && model.mtp_layers > 0) {
    add_layer_shapes(model, layout, model.layers - 1, shapes);
    shapes.insert({model.hidden / layout.sizes.tp, 2 * model.hidden});  // the MTP projection
  }
  double elements = 0;
  for (const auto& [rows, cols] : shapes) {
    elements += static_cast<double>(rows) * static_cast<double>(cols);
  }
  return kParameterBytes * elements;
}

double output_wgrad_placeholder_bytes(const ModelSpec& model, const Layout& layout,
                                      std::int64_t stage) {
  if (!layout.holds_output(stage)) return 0.0;
  return kParameterBytes * table_elements(model, layout);
}

double embedding_grad_bytes(const ModelSpec& model, const Layout& layout, std::int64_t stage) {
  if (!layout.holds_embedding(stage)) return 0.0;
  return kParameterBytes * table_elements(model, layout);
}

}  // namespace wallsim::models
