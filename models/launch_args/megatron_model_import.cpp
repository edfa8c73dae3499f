#include "models/launch_args/megatron_model_import.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace wallsim::models {
namespace {

using nlohmann::json;

// "[0,1]*3" or "[1]": one term of a --moe-layer-freq list expression; nullopt if malformed.
std::optional<std::vector<int>> list_term(const std::string& term, std::size_t max_size) {
  const std::size_t close = term.find(']');
  if (term.empty() || term[0] != '[' || close == std::string::npos) return std::nullopt;
  std::vector<int> items;
  std::string item;
  for (char c : term.substr(1, close - 1) + ",") {
    if (c != ',') {
      item += c;
      continue;
    }
    if (item != "0" && item != "1") return std::nullopt;
    items.push_back(item == "1" ? 1 : 0);
    item.clear();
  }
  std::size_t repeat = 1;
  const std::string rest = term.substr(close + 1);
  if (!rest.empty()) {
    if (rest.size() < 2 || rest[0] != '*') return std::nullopt;
    const auto [end, error] = std::from_chars(rest.data() + 1, rest.data() + rest.size(), repeat);
    if (error != std::errc() || end != rest.data() + rest.size()) return std::nullopt;
  }
  // Longer than the model: the caller reports the length, so the list is not built.
  if (!items.empty() && repeat > max_size / items.size() + 1) repeat = max_size / items.size() + 1;
  std::vector<int> out;
  for (std::size_t r = 0; r < repeat; ++r) out.insert(out.end(), items.begin(), items.end());
  return out;
}

std::optional<std::vector<int>> layer_pattern(std::string text, std::size_t max_size) {
  text.erase(std::remove_if(text.begin(), text.end(), [](char c) { return std::isspace(c); }),
             text.end());
  if (text.size() > 2 && text.front() == '(' && text.back() == ')') {
    text = text.substr(1, text.size() - 2);
  }
  std::vector<int> pattern;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t plus = std::min(text.find('+', start), text.size());
    auto term = list_term(text.substr(start, plus - start), max_size);
    if (!term) return std::nullopt;
    pattern.insert(pattern.end(), term->begin(), term->end());
    if (pattern.size() > max_size) return pattern;  // too long: reported by the caller
    start = plus + 1;
  }
  return pattern;
}

// K when the pattern is K dense layers then only MoE layers; N when layer i is MoE iff i % N == 0.
void express_pattern(const std::vector<int>& pattern, json& moe) {
  const auto first_moe = std::find(pattern.begin(), pattern.end(), 1) - pattern.begin();
  const bool moe_tail =
      std::all_of(pattern.begin() + first_moe, pattern.end(), [](int v) { return v == 1; });
  if (moe_tail && first_moe < static_cast<long>(pattern.size())) {
    if (first_moe > 0) moe["first_dense_layers"] = first_moe;
    return;
  }
  for (std::size_t freq = 2; freq <= pattern.size(); ++freq) {
    bool matches = true;
    for (std::size_t i = 0; i < pattern.size() && matches; ++i) {
      matches = pattern[i] == (i % freq == 0 ? 1 : 0);
    }
    if (matches) {
      moe["layer_freq"] = static_cast<std::int64_t>(freq);
      return;
    }
  }
  moe["layer_freq"] = json();  // marks "not expressible" for the caller
}

void read_heads(MegatronArgs& args, bool mla, json& model, std::vector<std::string>& notes) {
  const bool gqa = args.enabled("--group-query-attention");
  const auto groups = args.integer("--num-query-groups");
  if (gqa) model["kv_heads"] = groups.value_or(1);  // Megatron's default: 1 group
  if (!gqa && groups) {
    notes.push_back("--num-query-groups " + std::to_string(*groups) +
                    " is ignored without --group-query-attention (as Megatron does)");
  }
  const auto kv_channels = args.integer("--kv-channels");
  if (kv_channels && !mla) model["head_dim"] = *kv_channels;
  if (kv_channels && mla) {
    notes.push_back(
        "--kv-channels is not used with --multi-latent-attention (the head dims are "
        "--qk-head-dim, --qk-pos-emb-head-dim and --v-head-dim)");
  }
}

// NullTokenizer's vocabulary is --vocab-size plus its end-of-document token
// (megatron/training/tokenizer/tokenizer.py, _NullTokenizer.vocab_size).
std::int64_t read_vocab(MegatronArgs& args, std::optional<std::int64_t> fallback) {
  const auto tokenizer = args.text("--tokenizer-type");
  const auto size = args.integer("--vocab-size");
  if (size) return *size + (tokenizer == "NullTokenizer" ? 1 : 0);
  if (fallback) return *fallback;
  args.fail("--vocab-size",
            "missing: the vocabulary comes from the tokenizer" +
                (tokenizer ? " (--tokenizer-type " + *tokenizer + ")" : std::string()) +
                "; add --vocab-size N to the arguments or give wallsim import --vocab N");
}

void read_shape(MegatronArgs& args, json& model) {
  for (const auto& [flag, key] : {std::pair{"--num-layers", "layers"},
                                  {"--hidden-size", "hidden"},
                                  {"--num-attention-heads", "heads"}}) {
    const auto value = args.integer(flag);
    if (!value) args.fail(flag, "missing: Megatron needs it to build the model");
    model[key] = *value;
  }
  if (const auto ffn = args.integer("--ffn-hidden-size")) model["ffn_hidden"] = *ffn;
  const bool swiglu = args.enabled("--swiglu");
  const bool squared_relu = args.enabled("--squared-relu");
  if (swiglu && squared_relu) args.fail("--squared-relu", "contradicts --swiglu: give one");
  model["activation"] = swiglu ? "swiglu" : squared_relu ? "squared_relu" : "gelu";
  const auto norm = args.choice("--normalization", {"LayerNorm", "RMSNorm"});
  model["norm"] = norm == "RMSNorm" ? "rmsnorm" : "layernorm";
  model["tied_embeddings"] = !args.enabled("--untie-embeddings-and-output-weights");
  // Megatron's dropout defaults are 0.1 each (arguments.py); wallsim's are 0.
  model["hidden_dropout"] = args.number("--hidden-dropout", 0.0, 0.999).value_or(0.1);
  model["attention_dropout"] = args.number("--attention-dropout", 0.0, 0.999).value_or(0.1);
}

void read_router(MegatronArgs& args, json& moe, std::vector<std::string>& notes) {
  moe["score_function"] =
      args.choice("--moe-router-score-function", {"softmax", "sigmoid"}).value_or("softmax");
  if (const auto factor = args.number("--moe-expert-capacity-factor", 1e-9, 1e9)) {
    moe["capacity_factor"] = *factor;
    if (!args.enabled("--moe-pad-expert-input-to-capacity")) {
      notes.push_back(
          "--moe-expert-capacity-factor without --moe-pad-expert-input-to-capacity: "
          "wallsim sizes the experts' inputs at full capacity (as with padding)");
    }
  } else if (args.enabled("--moe-pad-expert-input-to-capacity")) {
    notes.push_back(
        "--moe-pad-expert-input-to-capacity has no effect without "
        "--moe-expert-capacity-factor (dropless routing)");
  }
  if (args.enabled("--moe-router-fusion")) moe["router_fusion"] = true;
  const auto groups = args.integer("--moe-router-num-groups");
  const auto group_topk = args.integer("--moe-router-group-topk");
  if (groups && group_topk) {
    moe["router_groups"] = *groups;
    moe["router_group_topk"] = *group_topk;
  } else if (groups || group_topk) {
    notes.push_back(std::string(groups ? "--moe-router-num-groups" : "--moe-router-group-topk") +
                    " without " + (groups ? "--moe-router-group-topk" : "--moe-router-num-groups") +
                    ": routing taken as not group-limited");
  }
  args.enabled("--moe-router-force-load-balancing");  // wallsim's "uniform" routing
}

// MoE options on a dense model: read (so they are not reported as unknown) and named.
void note_moe_without_experts(MegatronArgs& args, std::vector<std::string>& notes) {
  std::string given;
  for (const char* flag :
       {"--moe-router-topk", "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size",
        "--moe-layer-freq", "--moe-router-score-function", "--moe-expert-capacity-factor",
        "--moe-pad-expert-input-to-capacity", "--moe-router-fusion", "--moe-router-num-groups",
        "--moe-router-group-topk", "--moe-grouped-gemm", "--moe-token-dispatcher-type",
        "--moe-router-force-load-balancing", "--expert-model-parallel-size",
        "--expert-tensor-parallel-size"}) {
    if (!args.has(flag)) continue;
    args.ignore(flag);
    given += (given.empty() ? "" : ", ") + std::string(flag);
  }
  if (!given.empty()) notes.push_back("ignored without --num-experts (a dense model): " + given);
}

void read_moe(MegatronArgs& args, json& model, std::vector<std::string>& notes) {
  const auto experts = args.integer("--num-experts");
  if (!experts) return note_moe_without_experts(args, notes);
  json moe = {{"experts", *experts},
              {"topk", args.integer("--moe-router-topk").value_or(2)}};  // Megatron's default
  if (const auto width = args.integer("--moe-ffn-hidden-size")) moe["ffn_hidden"] = *width;
  if (const auto shared = args.integer("--moe-shared-expert-intermediate-size")) {
    moe["shared_ffn_hidden"] = *shared;
  }
  read_moe_layer_freq(args, model["layers"].get<std::int64_t>(), moe);
  read_router(args, moe, notes);
  model["moe"] = moe;
}

// Megatron's MLA defaults (arguments.py): q_lora_rank None, kv_lora_rank 32, qk_head_dim 128,
// qk_pos_emb_head_dim 64, v_head_dim 128.
void read_mla(MegatronArgs& args, json& model) {
  const bool mla = args.enabled("--multi-latent-attention");
  const auto q_rank = args.integer("--q-lora-rank");
  json latent = {{"q_lora_rank", q_rank ? json(*q_rank) : json()},
                 {"kv_lora_rank", args.integer("--kv-lora-rank").value_or(32)},
                 {"qk_head_dim", args.integer("--qk-head-dim").value_or(128)},
                 {"qk_rope_head_dim", args.integer("--qk-pos-emb-head-dim", 0).value_or(64)},
                 {"v_head_dim", args.integer("--v-head-dim").value_or(128)}};
  if (mla) model["mla"] = latent;
}

}  // namespace

void read_moe_layer_freq(MegatronArgs& args, std::int64_t layers, json& moe) {
  const auto text = args.text("--moe-layer-freq");
  if (!text) return;
  if (std::all_of(text->begin(), text->end(), [](char c) { return std::isdigit(c) != 0; })) {
    const auto freq = args.integer("--moe-layer-freq");
    if (*freq > 1) moe["layer_freq"] = *freq;
    return;
  }
  const auto pattern = layer_pattern(*text, static_cast<std::size_t>(layers));
  if (!pattern) {
    args.fail("--moe-layer-freq", *text,
              "must be an integer or a list expression of 0s and 1s such as ([0]*3+[1]*58)");
  }
  if (static_cast<std::int64_t>(pattern->size()) != layers) {
    args.fail("--moe-layer-freq", *text,
              (static_cast<std::int64_t>(pattern->size()) > layers
                   ? "lists more"
                   : "lists " + std::to_string(pattern->size())) +
                  " layers, but --num-layers is " + std::to_string(layers));
  }
  express_pattern(*pattern, moe);
  if (moe.contains("layer_freq") && moe["layer_freq"].is_null()) {
    args.fail("--moe-layer-freq", *text,
              "wallsim expresses K dense layers followed by MoE layers, or every N-th layer MoE "
              "starting at layer 0; this pattern is neither");
  }
}

json megatron_model_json(MegatronArgs& args, std::optional<std::int64_t> vocab,
                         std::vector<std::string>& notes) {
  json model;
  read_shape(args, model);
  read_mla(args, model);
  read_heads(args, model.contains("mla"), model, notes);
  model["vocab"] = read_vocab(args, vocab);
  read_moe(args, model, notes);
  if (const auto mtp = args.integer("--mtp-num-layers", 0); mtp && *mtp > 0) {
    model["mtp_layers"] = *mtp;
  }
  if (!args.enabled("--disable-bias-linear")) {
    notes.push_back(
        "linear-layer biases (Megatron's default without --disable-bias-linear) are "
        "not counted in parameters, FLOPs or memory");
  }
  return model;
}

}  // namespace wallsim::models
