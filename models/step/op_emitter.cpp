#include "models/step/op_emitter.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace wallsim::models {
namespace {

double elements(std::int64_t rows, std::int64_t cols, std::int64_t batch) {
  return static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(batch);
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_number(std::string_view word) {
  return !word.empty() && std::all_of(word.begin(), word.end(), is_digit);
}

void append_word(std::string& text, std::string_view word) {
  if (word.empty()) return;
  if (!text.empty()) text += ' ';
  text.append(word);
}

}  // namespace

std::string kernel_family(const OpTag& tag, std::string_view name) {
  std::string family;
  if (!tag.layer) {
    std::string_view prefix = tag.prefix;
    while (!prefix.empty() && is_digit(prefix.back())) prefix.remove_suffix(1);
    append_word(family, prefix);
  }
  while (!name.empty()) {
    const std::size_t space = name.find(' ');
    const std::string_view word = name.substr(0, space);
    if (!is_number(word)) append_word(family, word);
    name.remove_prefix(space == std::string_view::npos ? name.size() : space + 1);
  }
  if (tag.recompute) family += " (recompute)";
  return family;
}

std::uint32_t PayloadTable::index(CollectiveOp op, double bytes) {
  const auto [it, added] =
      index_.emplace(std::make_pair(op, bytes), static_cast<std::uint32_t>(payloads_.size()));
  if (added) payloads_.push_back({op, bytes});
  return it->second;
}

OpEmitter::OpEmitter(OpGraph& graph, KernelTimer& timer, PayloadTable& payloads, Dtype gemm_dtype,
                     Quantization quantization)
    : graph_(graph),
      timer_(timer),
      payloads_(payloads),
      gemm_dtype_(gemm_dtype),
      cast_bytes_per_element_(cast_bytes_per_element(quantization)) {}

Op OpEmitter::tagged(OpKind kind, OpCategory category, StreamIndex stream) const {
  Op op;
  op.kind = kind;
  op.category = category_code(category);
  op.stream = stream;
  op.microbatch = tag_.microbatch;
  op.layer = tag_.layer;
  return op;
}

OpIndex OpEmitter::add(Op op, std::string_view name, const Deps& deps) {
  label_.clear();
  if (!tag_.prefix.empty()) label_.append(tag_.prefix).append(" ");
  label_.append(name);
  if (tag_.recompute) label_.append(" (recompute)");
  // The family is worked out once per distinct label, not per op.
  const auto known = graph_.find_label(label_);
  op.label = known ? *known : graph_.intern_label(label_, kernel_family(tag_, name));
  assign_host_cost(op);
  for (OpIndex dep : deps) {
    if (is_deferred_placeholder(dep)) {
      throw std::logic_error("op \"" + label_ + "\" depends on a deferred weight gradient");
    }
  }
  unique_deps_.assign(deps.begin(), deps.end());
  std::sort(unique_deps_.begin(), unique_deps_.end());
  unique_deps_.erase(std::unique(unique_deps_.begin(), unique_deps_.end()), unique_deps_.end());
  return graph_.add(std::move(op), std::span<const OpIndex>(unique_deps_));
}

void OpEmitter::assign_host_cost(Op& op) {
  op.host_sync = std::exchange(sync_next_, false);
  const int kernels = std::exchange(next_kernels_, 1);
  if (!captured(static_cast<OpCategory>(op.category))) {
    op.host_cost = Time::from_seconds(host_.costs.kernel_issue.seconds() * kernels);
    graph_open_ = false;
    return;
  }
  op.host_cost = graph_open_ ? Time::zero() : host_.costs.graph_issue;
  graph_open_ = true;
}

bool OpEmitter::captured(OpCategory category) const {
  if (eager_ || category == OpCategory::kOptimizer) return false;
  switch (host_.graphs) {
    case CudaGraphs::kNone:
      return false;
    case CudaGraphs::kPerLayer:
      return tag_.layer.has_value() && category != OpCategory::kDp && category != OpCategory::kPp;
    case CudaGraphs::kFullIteration:
      return true;
  }
  return false;
}

OpIndex OpEmitter::add_compute(std::string_view name, OpCategory category, KernelTime time,
                               double flops, double bytes, const Deps& deps) {
  Op op = tagged(OpKind::kCompute, category, Streams::kCompute);
  op.duration = time.alone;
  op.duration_contended = time.contended;
  op.flops = flops;
  op.bytes = static_cast<float>(bytes);
  op.alloc_bytes = pending_alloc_bytes_;
  op.free_bytes = pending_free_bytes_;
  pending_alloc_bytes_ = pending_free_bytes_ = 0;
  last_compute_ = add(std::move(op), name, deps);
  return *last_compute_;
}

OpIndex OpEmitter::gemm(std::string_view name, const GemmShape& shape, const Deps& deps) {
  Deps gemm_deps = deps;
  if (cast_bytes_per_element_ > 0) {
    // The casts wait for what the GEMM waits for (its gathered input); the GEMM follows them
    // on the compute stream.
    const std::string base(name);
    memory_bound(base + " cast a",
                 cast_bytes_per_element_ * elements(shape.m, shape.k, shape.batch), deps);
    memory_bound(base + " cast b",
                 cast_bytes_per_element_ * elements(shape.k, shape.n, shape.batch));
    gemm_deps.clear();
  }
  return add_compute(name, OpCategory::kGemm, timer_.gemm(shape, gemm_dtype_), gemm_flops(shape),
                     0.0, gemm_deps);
}

OpIndex OpEmitter::wgrad(std::string_view name, const GemmShape& shape, const Deps& deps) {
  if (!deferring_) return gemm(name, shape, deps);
  const OpIndex placeholder = next_placeholder_++;
  DeferredWeightGradients::Gemm w;
  w.tag = tag_;
  w.name = std::string(name);
  w.shape = shape;
  w.deps = deps;
  w.placeholder = placeholder;
  deferred_.gemms.push_back(std::move(w));
  return placeholder;
}

OpIndex OpEmitter::grouped_wgrad(std::string_view name, const GroupedGemmShape& shape,
                                 bool one_kernel, const Deps& deps) {
  if (!deferring_) return grouped_gemm(name, shape, one_kernel, deps);
  const OpIndex placeholder = next_placeholder_++;
  DeferredWeightGradients::Gemm w;
  w.tag = tag_;
  w.name = std::string(name);
  w.deps = deps;
  w.placeholder = placeholder;
  w.grouped = shape;
  w.one_kernel = one_kernel;
  w.eager = eager_;
  deferred_.gemms.push_back(std::move(w));
  return placeholder;
}

OpEmitter::DeferredWeightGradients OpEmitter::take_deferred_weight_gradients() {
  return std::exchange(deferred_, DeferredWeightGradients{});
}

void OpEmitter::emit_weight_gradients(DeferredWeightGradients deferred,
                                      std::vector<GradReady>& grads) {
  const OpTag saved = tag_;
  const bool saved_eager = eager_;
  std::vector<std::pair<OpIndex, OpIndex>> emitted;  // placeholder → op
  for (std::size_t i = 0; i < deferred.gemms.size(); ++i) {
    auto& w = deferred.gemms[i];
    set_tag(std::move(w.tag));
    if (w.eager != eager_) set_eager(w.eager);
    if (i + 1 == deferred.gemms.size()) pending_free_bytes_ += deferred.free_bytes;
    const OpIndex op = w.grouped ? grouped_gemm(w.name, *w.grouped, w.one_kernel, w.deps)
                                 : gemm(w.name, w.shape, w.deps);
    emitted.emplace_back(w.placeholder, op);
  }
  if (deferred.gemms.empty()) pending_free_bytes_ += deferred.free_bytes;
  if (saved_eager != eager_) set_eager(saved_eager);
  set_tag(saved);
  for (GradReady& grad : grads) {
    if (!is_deferred_placeholder(grad.op)) continue;
    const auto it = std::find_if(emitted.begin(), emitted.end(),
                                 [&](const auto& e) { return e.first == grad.op; });
    if (it == emitted.end()) throw std::logic_error("a weight gradient was never emitted");
    grad.op = it->second;
  }
}

OpIndex OpEmitter::grouped_gemm(std::string_view name, const GroupedGemmShape& shape,
                                bool one_kernel, const Deps& deps) {
  Deps gemm_deps = deps;
  if (cast_bytes_per_element_ > 0) {
    double a = 0, b = 0;
    for (const GemmShape& p : shape.problems) {
      a += elements(p.m, p.k, p.batch);
      b += elements(p.k, p.n, p.batch);
    }
    const std::string base(name);
    memory_bound(base + " cast a", cast_bytes_per_element_ * a, deps);
    memory_bound(base + " cast b", cast_bytes_per_element_ * b);
    gemm_deps.clear();
  }
  // Without a grouped kernel each problem is its own launch, and the host issues each.
  if (!one_kernel) next_kernels_ = static_cast<int>(shape.problems.size());
  const KernelTimer::GroupedTime timed = timer_.grouped_gemm(shape, gemm_dtype_, one_kernel);
  return add_compute(name, OpCategory::kGemm, timed.time, timed.flops, 0.0, gemm_deps);
}

OpIndex OpEmitter::gemm_piece(std::string_view name, const GemmShape& whole, std::int64_t rows,
                              bool first_piece, const Deps& deps) {
  const GemmShape piece{rows, whole.n, whole.k, whole.batch};
  Deps gemm_deps = deps;
  if (cast_bytes_per_element_ > 0) {
    const std::string base(name);
    memory_bound(base + " cast a",
                 cast_bytes_per_element_ * elements(piece.m, piece.k, piece.batch), deps);
    if (first_piece) {
      memory_bound(base + " cast b",
                   cast_bytes_per_element_ * elements(whole.k, whole.n, whole.batch));
    }
    gemm_deps.clear();
  }
  const KernelTime full = timer_.gemm(whole, gemm_dtype_);
  const double share = static_cast<double>(rows) / static_cast<double>(whole.m);
  const KernelTime time{Time::from_seconds(full.alone.seconds() * share),
                        Time::from_seconds(full.contended.seconds() * share)};
  return add_compute(name, OpCategory::kGemm, time, gemm_flops(piece), 0.0, gemm_deps);
}

OpIndex OpEmitter::attention(std::string_view name, const std::vector<AttentionShape>& shapes,
                             bool backward, const Deps& deps) {
  KernelTime total{Time::zero(), Time::zero()};
  double flops = 0;
  for (const AttentionShape& shape : shapes) {
    const KernelTime time = timer_.attention(shape, backward);
    total.alone += time.alone;
    total.contended += time.contended;
    flops += backward ? attention_backward_flops(shape) : attention_forward_flops(shape);
  }
  return add_compute(name, OpCategory::kAttention, total, flops, 0.0, deps);
}

OpIndex OpEmitter::memory_bound(std::string_view name, double bytes, const Deps& deps,
                                OpCategory category) {
  return add_compute(name, category, timer_.memory_bound(bytes), 0.0, bytes, deps);
}

OpIndex OpEmitter::memory_bound_kernels(std::string_view name, double bytes, int kernels,
                                        const Deps& deps) {
  KernelTime time = timer_.memory_bound(bytes);
  const Time gaps =
      Time::from_seconds(timer_.profile().kernel_launch_overhead.seconds() * (kernels - 1));
  time.alone = time.alone + gaps;
  time.contended = time.contended + gaps;
  next_kernels_ = kernels;
  return add_compute(name, OpCategory::kElementwise, time, 0.0, bytes, deps);
}

OpIndex OpEmitter::collective(std::string_view name, CollectiveOp op_kind, double bytes,
                              GroupIndex group, OpCategory category, StreamIndex stream,
                              const Deps& deps, bool occupies_sms, double alloc_bytes,
                              double free_bytes) {
  Op op = tagged(OpKind::kCollective, category, stream);
  op.group = group;
  op.payload = payloads_.index(op_kind, bytes);
  op.occupies_sms = occupies_sms;
  op.alloc_bytes = alloc_bytes;
  op.free_bytes = free_bytes;
  return add(std::move(op), name, deps);
}

OpIndex OpEmitter::host_copy(std::string_view name, double bytes, Time duration, StreamIndex stream,
                             double alloc_bytes, double free_bytes, const Deps& deps) {
  Op op = tagged(OpKind::kCompute, OpCategory::kOffload, stream);
  op.duration = duration;
  op.duration_contended = duration;
  op.bytes = static_cast<float>(bytes);
  op.alloc_bytes = alloc_bytes;
  op.free_bytes = free_bytes;
  return add(std::move(op), name, deps);
}

OpIndex OpEmitter::send(std::string_view name, RankIndex peer, double bytes, StreamIndex stream,
                        std::uint16_t tag, const Deps& deps) {
  Op op = tagged(OpKind::kSend, OpCategory::kPp, stream);
  op.peer = peer;
  op.tag = tag;
  op.payload = payloads_.index(CollectiveOp::kSendRecv, bytes);
  return add(std::move(op), name, deps);
}

OpIndex OpEmitter::recv(std::string_view name, RankIndex peer, double bytes, StreamIndex stream,
                        std::uint16_t tag) {
  Op op = tagged(OpKind::kRecv, OpCategory::kPp, stream);
  op.peer = peer;
  op.tag = tag;
  op.payload = payloads_.index(CollectiveOp::kSendRecv, bytes);
  return add(std::move(op), name, {});
}

}  // namespace wallsim::models
