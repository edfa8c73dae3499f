#include "models/step/moe_ops.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace wallsim::models {
namespace {

constexpr double kBf16Bytes = 2.0;

double d(std::int64_t v) {
  return static_cast<double>(v);
}

// Per problem: the data gradient dX = dY·Wᵀ (m × k from m × n) and the weight gradient
// dW = Xᵀ·dY (k × n summed over the m rows), as for a dense linear layer.
GroupedGemmShape grouped_dgrad(const GroupedGemmShape& f) {
  GroupedGemmShape out;
  for (const GemmShape& p : f.problems) out.problems.push_back({p.m, p.k, p.n, p.batch});
  return out;
}

GroupedGemmShape grouped_wgrad(const GroupedGemmShape& f) {
  GroupedGemmShape out;
  for (const GemmShape& p : f.problems) out.problems.push_back({p.k, p.n, p.m, p.batch});
  return out;
}

// C(pool − left_out, k) / C(pool, k): the chance that k draws without repetition from `pool`
// items all miss `left_out` of them.
double all_miss(double pool, double left_out, std::int64_t k) {
  double chance = 1.0;
  for (std::int64_t i = 0; i < k; ++i) {
    chance *= std::max(0.0, (pool - left_out - d(i)) / (pool - d(i)));
  }
  return chance;
}

double binomial(std::int64_t n, std::int64_t r) {
  if (r < 0 || r > n) return 0.0;
  double value = 1.0;
  for (std::int64_t i = 1; i <= r; ++i) value = value * d(n - r + i) / d(i);
  return value;
}

// Kernels of a router's forward, its GEMM included (NVIDIA's DeepSeek-V3 GB200 guide §2.1.4).
constexpr int kRouterKernels = 72;
constexpr int kFusedRouterKernels = 31;

// Dropless routing gives the dispatcher and the experts shapes known only at run time: they run
// eagerly even under per-layer CUDA graphs (Megatron-Core captures attention, the router and
// the dispatcher's preprocessing, not the token exchange and the experts). With a capacity the
// buffers are padded to it (static shapes) and the whole layer can be captured.

class EagerScope {
 public:
  EagerScope(OpEmitter& emit, bool eager) : emit_(emit) { emit_.set_eager(eager); }
  ~EagerScope() { emit_.set_eager(false); }
  EagerScope(const EagerScope&) = delete;
  EagerScope& operator=(const EagerScope&) = delete;

 private:
  OpEmitter& emit_;
};

}  // namespace

double expected_domains_reached(std::int64_t experts, std::int64_t topk, std::int64_t domains,
                                std::int64_t groups, std::int64_t group_topk) {
  if (domains <= 1 || experts <= 0) return 1.0;
  const double e = d(experts), per_domain = e / d(domains);
  double missed = all_miss(e, per_domain, topk);  // P(a given domain holds none of the k)
  if (groups > 1 && group_topk < groups && experts % groups == 0) {
    const double pool = d(group_topk) * e / d(groups);  // experts of the chosen groups
    if (groups % domains == 0) {
      const std::int64_t held = groups / domains;  // whole groups per domain
      missed = 0.0;
      for (std::int64_t j = 0; j <= std::min(held, group_topk); ++j) {
        const double p = binomial(held, j) * binomial(groups - held, group_topk - j) /
                         binomial(groups, group_topk);
        missed += p * all_miss(pool, d(j) * e / d(groups), topk);
      }
    } else if (domains % groups == 0) {
      const double chosen = d(group_topk) / d(groups);
      missed = (1.0 - chosen) + chosen * all_miss(pool, per_domain, topk);
    }
  }
  return d(domains) * (1.0 - missed);
}

MoeLoad moe_load(const MoeSpec& moe, double tokens, std::int64_t ep) {
  MoeLoad load;
  load.tokens = tokens;
  const double routed = tokens * d(moe.topk);  // rows this rank routes
  const std::vector<double> loads = expert_load_shares(moe.imbalance, moe.experts);
  const std::int64_t local = moe.experts / ep;
  // Rows reaching each expert from the whole EP group (ep source ranks of T tokens each).
  std::vector<double> expert_rows(loads.size());
  double cap = 0;
  if (moe.capacity_factor) {
    load.capacity = std::ceil(routed / d(moe.experts) * *moe.capacity_factor);
    cap = d(ep) * load.capacity;
  }
  double kept = 0;
  for (std::size_t i = 0; i < loads.size(); ++i) {
    expert_rows[i] = d(ep) * routed * loads[i];
    kept += cap > 0 ? std::min(expert_rows[i], cap) : expert_rows[i];
  }
  load.dropped_fraction = 1.0 - kept / (d(ep) * routed);
  for (std::int64_t r = 0; r < ep; ++r) {
    double share = 0, rows = 0;
    std::vector<double> per_expert;
    for (std::int64_t e = r * local; e < (r + 1) * local; ++e) {
      share += loads[static_cast<std::size_t>(e)];
      // Padded buffers: with a capacity every expert computes exactly ep·C rows.
      per_expert.push_back(cap > 0 ? cap : expert_rows[static_cast<std::size_t>(e)]);
      rows += per_expert.back();
    }
    if (share > load.busiest_share) load.busiest_share = share;
    if (r == 0 || rows > load.received_rows) {
      load.received_rows = rows;
      load.busiest_expert_rows = std::move(per_expert);
    }
  }
  load.sent_rows = cap > 0 ? d(moe.experts) * load.capacity : routed;
  return load;
}

MoeOps::MoeOps(OpEmitter& emit, const LayerDims& dims, const MoeSpec& moe,
               const MoeSetting& setting, TpLinear& shared_linear)
    : emit_(emit), dims_(dims), moe_(moe), setting_(setting), shared_(shared_linear) {
  const double tokens = d(dims.tokens()) / (dims.sequence_parallel ? d(dims.tp) : 1.0);
  load_ = moe_load(moe, tokens, setting.ep);
  local_experts_ = moe.experts / setting.ep;
  // The allgather dispatcher hands a rank every token of the ETP×EP group for its experts:
  // T·etp·ep·k·(local share) rows, the same count as all-to-all plus the ETP gather.
  expert_rows_ = load_.received_rows * d(setting.etp) / d(local_experts_);
  for (double rows : load_.busiest_expert_rows) {
    expert_problem_rows_.push_back(std::llround(rows * d(setting.etp)));
  }
  gemms_ = expert_gemms();
  if (setting.dispatcher == MoeDispatcher::kFlex) {
    flex_rows_ =
        load_.tokens * expected_domains_reached(moe.experts, moe.topk, setting.tp_ep_domains,
                                                moe.router_groups, moe.router_group_topk);
  }
}

double MoeOps::row_bytes() const {
  return kBf16Bytes * d(dims_.hidden);
}

GemmShape MoeOps::router() const {
  return {static_cast<std::int64_t>(load_.tokens), moe_.experts, dims_.hidden};
}

std::int64_t MoeOps::fc1_width() const {
  return (dims_.gated ? 2 : 1) * moe_.ffn_hidden / setting_.etp;
}

std::int64_t MoeOps::fc2_k() const {
  return moe_.ffn_hidden / setting_.etp;
}

GroupedGemmShape MoeOps::experts(std::int64_t n, std::int64_t k) const {
  GroupedGemmShape shape;
  for (std::int64_t rows : expert_problem_rows_) shape.problems.push_back({rows, n, k});
  return shape;
}

MoeOps::ExpertGemms MoeOps::expert_gemms() const {
  ExpertGemms g;
  g.fc1 = experts(fc1_width(), dims_.hidden);
  g.fc2 = experts(dims_.hidden, fc2_k());
  g.fc1_dgrad = grouped_dgrad(g.fc1);
  g.fc1_wgrad = grouped_wgrad(g.fc1);
  g.fc2_dgrad = grouped_dgrad(g.fc2);
  g.fc2_wgrad = grouped_wgrad(g.fc2);
  return g;
}

OpIndex MoeOps::exchange(const std::string& name, CollectiveOp op, double bytes, GroupIndex group,
                         const Deps& deps) {
  return emit_.collective(name, op, bytes, group, OpCategory::kEp, Streams::kEp, deps);
}

// Tokens out to the experts: the dispatcher's exchange, then the ETP gather.
Deps MoeOps::dispatch(const std::string& pass, const Deps& deps) {
  if (setting_.dispatcher == MoeDispatcher::kAllGather) {
    const double gathered = load_.tokens * d(setting_.etp * setting_.ep) * row_bytes();
    return {exchange("moe dispatch ag " + pass, CollectiveOp::kAllGather, gathered,
                     setting_.tp_ep_group, deps)};
  }
  if (setting_.dispatcher == MoeDispatcher::kFlex) {
    return {exchange("moe dispatch " + pass, CollectiveOp::kAllToAll, flex_rows_ * row_bytes(),
                     setting_.tp_ep_group, deps)};
  }
  // An uneven all-to-all is paced by the rank receiving the most rows.
  const double rows = std::max(load_.sent_rows, load_.received_rows);
  Deps out{exchange("moe dispatch " + pass, CollectiveOp::kAllToAll, rows * row_bytes(),
                    setting_.ep_group, deps)};
  if (setting_.etp > 1) {
    out = {exchange("moe etp ag " + pass, CollectiveOp::kAllGather,
                    d(setting_.etp) * load_.received_rows * row_bytes(), setting_.etp_group, out)};
  }
  return out;
}

// The all-to-all dispatcher receives its rows grouped by source rank and hands the experts rows
// grouped by expert: with several local experts Megatron-Core reorders every received row
// (sort_chunks_by_idxs after the dispatch, its inverse before the combine; with padded
// buffers a transpose made contiguous), one read and one write of each, and autograd runs the
// inverse of each in the backward, on the same side of the exchange. They are emitted with the
// experts, so that under the EP overlap the compute stream reaches them only after the other
// micro-batch's work that runs beside the exchange.
Deps MoeOps::reorder(const std::string& name, const Deps& deps) {
  if (setting_.dispatcher != MoeDispatcher::kAllToAll || local_experts_ <= 1) return deps;
  const double bytes = 2.0 * d(setting_.etp) * load_.received_rows * row_bytes();
  return {emit_.memory_bound(name, bytes, deps)};
}

// Expert outputs back: the ETP reduce-scatter, then the dispatcher's exchange.
Deps MoeOps::combine(const std::string& pass, const Deps& deps) {
  if (setting_.dispatcher == MoeDispatcher::kAllGather) {
    const double gathered = load_.tokens * d(setting_.etp * setting_.ep) * row_bytes();
    return {exchange("moe combine rs " + pass, CollectiveOp::kReduceScatter, gathered,
                     setting_.tp_ep_group, deps)};
  }
  if (setting_.dispatcher == MoeDispatcher::kFlex) {
    return {exchange("moe combine " + pass, CollectiveOp::kAllToAll, flex_rows_ * row_bytes(),
                     setting_.tp_ep_group, deps)};
  }
  Deps in = deps;
  if (setting_.etp > 1) {
    in = {exchange("moe etp rs " + pass, CollectiveOp::kReduceScatter,
                   d(setting_.etp) * load_.received_rows * row_bytes(), setting_.etp_group, in)};
  }
  const double rows = std::max(load_.sent_rows, load_.received_rows);
  return {exchange("moe combine " + pass, CollectiveOp::kAllToAll, rows * row_bytes(),
                   setting_.ep_group, in)};
}

GemmShape MoeOps::shared_fc1() const {
  return {dims_.tokens(), (dims_.gated ? 2 : 1) * moe_.shared_ffn_hidden / dims_.tp, dims_.hidden};
}

GemmShape MoeOps::shared_fc2() const {
  return {dims_.tokens(), dims_.hidden, moe_.shared_ffn_hidden / dims_.tp};
}

void MoeOps::shared_fc1_forward(const Deps& deps) {
  shared_.column_forward("shared fc1", shared_fc1(), deps);
  emit_.memory_bound("shared act fwd",
                     (dims_.gated ? 6.0 : 4.0) * d(dims_.tokens()) * d(shared_fc2().k));
}

double MoeOps::expert_elements() const {
  return expert_rows_ * d(local_experts_) * d(fc2_k());
}

MoeForward MoeOps::forward_dispatch(const Deps& deps) {
  const double t = load_.tokens, routed = load_.sent_rows;
  std::optional<OpIndex> shared;
  if (shared_in_line()) {
    shared_fc1_forward(deps);
    shared = shared_.row_forward("shared fc2", shared_fc2());
  }
  emit_.gemm("router fwd", router(), deps);
  // Softmax/sigmoid, top-k, routing map and aux loss over the [T, E] logits (read, write fp32):
  // the router's kernels after its GEMM, 72 in all unfused and 31 with router fusion
  // (docs/reference/moe.md, measured on DeepSeek-V3's router; others are taken alike).
  const OpIndex routed_map =
      emit_.memory_bound_kernels("router topk fwd", 8.0 * t * d(moe_.experts),
                                 moe_.router_fusion ? kFusedRouterKernels - 1 : kRouterKernels - 1);
  const bool dropless = !moe_.capacity_factor;
  const EagerScope eager(emit_, dropless);
  // The token counts per expert (int64) of every rank of the ETP×EP group; the compute stream
  // waits for them (the gather is a blocking torch.distributed call) before it permutes.
  Deps permute_after;
  if (setting_.counts_gather) {
    const double counts_bytes = 8.0 * d(moe_.experts) * d(setting_.etp * setting_.ep);
    permute_after.push_back(exchange("moe counts ag fwd", CollectiveOp::kAllGather, counts_bytes,
                                     setting_.tp_ep_group, {routed_map}));
  }
  // Dropless, the host needs the token counts to size the exchange (Megatron-Core's
  // alltoall dispatcher synchronises "before_ep_alltoall"; the all-gather dispatcher after the
  // gather, "before_finish"), so it waits once per MoE layer's forward.
  const bool gather = setting_.dispatcher == MoeDispatcher::kAllGather;
  if (dropless && !gather) emit_.sync_host_on_next();
  // Permute: read each token, write one copy per chosen expert.
  const OpIndex permuted =
      emit_.memory_bound("permute fwd", (t + routed) * row_bytes(), permute_after);
  if (dropless && gather) emit_.sync_host_on_next();
  return {dispatch("fwd", {permuted}), {}, shared};
}

void MoeOps::forward_experts(MoeForward& state) {
  const EagerScope eager(emit_, !moe_.capacity_factor);
  if (shared_beside()) shared_fc1_forward({});
  emit_.grouped_gemm("experts fc1 fwd", gemms_.fc1, setting_.grouped_gemm,
                     reorder("sort chunks fwd", state.sent));
  emit_.memory_bound("experts act fwd", (dims_.gated ? 6.0 : 4.0) * expert_elements());
  const OpIndex fc2 = emit_.grouped_gemm("experts fc2 fwd", gemms_.fc2, setting_.grouped_gemm);
  state.combined = combine("fwd", reorder("unsort chunks fwd", {fc2}));
}

OpIndex MoeOps::forward_finish(MoeForward& state) {
  const EagerScope eager(emit_, !moe_.capacity_factor);
  Deps after = state.combined;
  if (shared_beside()) after.push_back(shared_.row_forward("shared fc2", shared_fc2()));
  if (state.shared) after.push_back(*state.shared);
  return emit_.memory_bound("unpermute fwd", (load_.sent_rows + load_.tokens) * row_bytes(), after);
}

OpIndex MoeOps::forward(const Deps& deps) {
  MoeForward state = forward_dispatch(deps);
  forward_experts(state);
  return forward_finish(state);
}

MoeBackward MoeOps::backward_combine(const Deps& deps) {
  const EagerScope eager(emit_, !moe_.capacity_factor);
  const double t = load_.tokens, routed = load_.sent_rows;
  const OpIndex unpermuted = emit_.memory_bound("unpermute bwd", (routed + t) * row_bytes(), deps);
  MoeBackward state;
  state.output_grad = deps;
  state.combined = combine("bwd", {unpermuted});
  return state;
}

void MoeOps::backward_experts(MoeBackward& state, bool recompute_activation) {
  const EagerScope eager(emit_, !moe_.capacity_factor);
  if (shared_beside()) {
    state.shared_fc2 = shared_.row_backward("shared fc2", shared_fc2()).wgrad;
  }
  if (recompute_activation) {
    OpTag again = emit_.tag();
    const OpTag plain = again;
    again.recompute = true;
    emit_.set_tag(again);
    emit_.memory_bound("experts act fwd", (dims_.gated ? 6.0 : 4.0) * expert_elements());
    emit_.set_tag(plain);
  }
  const bool grouped = setting_.grouped_gemm;
  emit_.grouped_gemm("experts fc2 dgrad", gemms_.fc2_dgrad, grouped,
                     reorder("sort chunks bwd", state.combined));
  state.fc2_wgrad = emit_.grouped_wgrad("experts fc2 wgrad", gemms_.fc2_wgrad, grouped);
  emit_.memory_bound("experts act bwd", (dims_.gated ? 10.0 : 6.0) * expert_elements());
  const OpIndex fc1_d = emit_.grouped_gemm("experts fc1 dgrad", gemms_.fc1_dgrad, grouped);
  state.fc1_wgrad = emit_.grouped_wgrad("experts fc1 wgrad", gemms_.fc1_wgrad, grouped);
  // The experts' backward computes the weight gradient in the same autograd step as the data
  // gradient (Transformer Engine's grouped linear, unless the W pass is deferred); the exchange
  // is issued after it, and PyTorch's NCCL stream waits for what the compute stream was given.
  Deps fc1_done{fc1_d};
  if (!OpEmitter::is_deferred_placeholder(state.fc1_wgrad)) fc1_done.push_back(state.fc1_wgrad);
  state.returned = dispatch("bwd", reorder("unsort chunks bwd", fc1_done));
}

OpIndex MoeOps::backward_finish(MoeBackward& state, std::vector<GradReady>& grads) {
  const double t = load_.tokens, routed = load_.sent_rows;
  const bool shared = moe_.shared_ffn_hidden > 0;
  std::optional<LinearBackward> shared_fc1_bwd;
  std::optional<EagerScope> eager;
  eager.emplace(emit_, !moe_.capacity_factor);
  const auto shared_act_and_fc1 = [&] {
    emit_.memory_bound("shared act bwd",
                       (dims_.gated ? 10.0 : 6.0) * d(dims_.tokens()) * d(shared_fc2().k));
    shared_fc1_bwd = shared_.column_backward("shared fc1", shared_fc1());
  };
  if (shared_beside()) shared_act_and_fc1();
  const auto wgrad = [](const GemmShape& f) { return GemmShape{f.k, f.n, f.m, f.batch}; };
  const auto dgrad = [](const GemmShape& f) { return GemmShape{f.m, f.k, f.n, f.batch}; };
  const OpIndex permuted =
      emit_.memory_bound("permute bwd", (t + routed) * row_bytes(), state.returned);
  eager.reset();  // the router's backward is captured with the rest of the layer
  emit_.memory_bound("router topk bwd", 8.0 * t * d(moe_.experts));
  const OpIndex router_d = emit_.gemm("router dgrad", dgrad(router()));
  // Deferred to a W pass (zero-bubble schedules), the router's weight gradient is a
  // placeholder; the layer's input gradient then waits for the router's data gradient only.
  const OpIndex router_w = emit_.wgrad("router wgrad", wgrad(router()));
  const OpIndex router_last = OpEmitter::is_deferred_placeholder(router_w) ? router_d : router_w;
  if (shared_in_line()) {
    state.shared_fc2 = shared_.row_backward("shared fc2", shared_fc2(), state.output_grad).wgrad;
    shared_act_and_fc1();
  }
  if (shared) {
    grads.push_back({d(shared_fc2().n * shared_fc2().k), *state.shared_fc2});
    grads.push_back({d(shared_fc1().n * shared_fc1().k), shared_fc1_bwd->wgrad});
  }
  grads.push_back({d(local_experts_) * d(dims_.hidden * fc2_k()), state.fc2_wgrad});
  grads.push_back({d(local_experts_) * d(fc1_width() * dims_.hidden), state.fc1_wgrad});
  grads.push_back({d(moe_.experts * dims_.hidden), router_w});
  Deps done{permuted, router_last};
  if (shared) done.push_back(shared_fc1_bwd->grad_input);
  return emit_.memory_bound("moe grad sum", 2.0 * kBf16Bytes * t * d(dims_.hidden), done);
}

OpIndex MoeOps::backward(const Deps& deps, std::vector<GradReady>& grads,
                         bool recompute_activation) {
  MoeBackward state = backward_combine(deps);
  backward_experts(state, recompute_activation);
  return backward_finish(state, grads);
}

std::vector<ParamUnit> MoeOps::units(std::int64_t layer) const {
  std::vector<ParamUnit> out;
  if (moe_.shared_ffn_hidden > 0) {
    const double f = d(moe_.shared_ffn_hidden / dims_.tp), h = d(dims_.hidden);
    out.push_back({h * f, layer});
    out.push_back({(dims_.gated ? 2.0 : 1.0) * h * f, layer});
  }
  out.push_back({d(local_experts_) * d(dims_.hidden * fc2_k()), layer, true});
  out.push_back({d(local_experts_) * d(fc1_width() * dims_.hidden), layer, true});
  out.push_back({d(moe_.experts * dims_.hidden), layer});
  return out;
}

}  // namespace wallsim::models
