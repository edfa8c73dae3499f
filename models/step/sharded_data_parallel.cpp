// DataParallelOps with sharded gradients and parameters (ZeRO-2 / ZeRO-3): FSDP units, the
// per-micro-batch reduce-scatters and ZeRO-3's per-pass parameter all-gathers
// (data_parallel_ops.hpp explains the mechanics and their sources).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/step/data_parallel_ops.hpp"

namespace wallsim::models {
namespace {

// ZeRO-3 gathers bf16 parameters.
constexpr double kGatheredBytesPerParam = 2.0;

}  // namespace

std::int64_t DataParallelOps::unit_module(const ParamUnit& unit) const {
  return unit.module >= setting_.decoder_layers ? kOutputModule : unit.module;
}

// One bucket per (FSDP unit, expert or not), in the chunk's backward order.
void DataParallelOps::build_unit_buckets() {
  for (std::size_t chunk = 0; chunk < chunk_units_.size(); ++chunk) {
    const auto& units = chunk_units_[chunk];
    for (const bool expert : {false, true}) {
      std::optional<std::int64_t> open_module;
      for (std::size_t u = 0; u < units.size(); ++u) {
        if (units[u].expert != expert) continue;
        const std::int64_t module = unit_module(units[u]);
        if (open_module != module) {
          buckets_.push_back(Bucket{static_cast<std::int64_t>(chunk), 0, {}, expert});
          open_module = module;
        }
        buckets_.back().params += units[u].params;
        buckets_.back().units.push_back(u);
      }
    }
  }
}

const std::vector<std::size_t>& DataParallelOps::module_positions(std::int64_t chunk,
                                                                  std::int64_t module) const {
  static const std::vector<std::size_t> kNone;
  const auto it = unit_positions_.find({chunk, module});
  return it == unit_positions_.end() ? kNone : it->second;
}

double DataParallelOps::module_params(std::int64_t chunk, std::int64_t module) const {
  double params = 0;
  for (std::size_t p : module_positions(chunk, module))
    params += buckets_[forward_order_[p]].params;
  return params;
}

std::optional<std::int64_t> DataParallelOps::neighbour_module(std::int64_t chunk,
                                                              std::int64_t module, int step) const {
  const auto& order = unit_order_[static_cast<std::size_t>(chunk)];
  const auto it = std::find(order.begin(), order.end(), module);
  if (it == order.end()) return std::nullopt;
  const auto at = it - order.begin() + step;
  if (at < 0 || at >= static_cast<std::ptrdiff_t>(order.size())) return std::nullopt;
  return order[static_cast<std::size_t>(at)];
}

// Per chunk, the units in forward order (its parameter units reversed, one entry per unit) and
// the forward positions of each unit's buckets that reduce.
void DataParallelOps::index_units() {
  unit_order_.assign(chunk_units_.size(), {});
  for (std::size_t chunk = 0; chunk < chunk_units_.size(); ++chunk) {
    const auto& units = chunk_units_[chunk];
    auto& order = unit_order_[chunk];
    for (std::size_t u = units.size(); u-- > 0;) {
      const std::int64_t m = unit_module(units[u]);
      if (std::find(order.begin(), order.end(), m) == order.end()) order.push_back(m);
    }
  }
  for (std::size_t p = 0; p < forward_order_.size(); ++p) {
    const Bucket& b = buckets_[forward_order_[p]];
    if (!reduces(b)) continue;
    const auto& units = chunk_units_[static_cast<std::size_t>(b.chunk)];
    unit_positions_[{b.chunk, unit_module(units[b.units.front()])}].push_back(p);
  }
}

Deps DataParallelOps::gather_for_pass(PassGathers& pass, std::int64_t microbatch,
                                      std::int64_t chunk, std::int64_t module, int step,
                                      const Deps& issue_after) {
  if (pass.microbatch != microbatch || pass.chunk != chunk) {
    pass =
        PassGathers{microbatch, chunk, std::vector<std::optional<OpIndex>>(forward_order_.size())};
  }
  const std::vector<std::size_t>& positions = module_positions(chunk, module);
  if (positions.empty()) return {};
  Deps issue = issue_after;
  if (const auto last = emit_.last_compute()) issue.push_back(*last);
  // This unit's buckets, then the next unit's (in the pass's direction) within the chunk; the
  // embedding's backward needs no weights.
  std::vector<std::size_t> dispatch = positions;
  if (const auto next = neighbour_module(chunk, module, step)) {
    if (step > 0 || *next != kEmbeddingModule) {
      for (std::size_t p : module_positions(chunk, *next)) dispatch.push_back(p);
    }
  }
  OpTag t;
  t.microbatch = static_cast<std::int32_t>(microbatch);
  t.prefix = "dp";
  emit_.set_tag(std::move(t));
  const std::string pass_name = step > 0 ? " fwd" : " bwd";
  for (std::size_t p : dispatch) {
    if (pass.gathers[p]) continue;
    const Bucket& b = buckets_[forward_order_[p]];
    pass.gathers[p] = emit_.collective(
        "unit " + std::to_string(forward_order_[p]) + " param ag" + pass_name,
        CollectiveOp::kAllGather, kGatheredBytesPerParam * b.params, group_of(b), OpCategory::kDp,
        Streams::kDpGather, issue, true, kGatheredBytesPerParam * b.params);
  }
  Deps waits;
  for (std::size_t p : positions) waits.push_back(*pass.gathers[p]);
  return waits;
}

Deps DataParallelOps::before_forward(std::int64_t microbatch, std::int64_t chunk,
                                     std::int64_t module, const Deps& issue_after) {
  if (!shards_params()) {
    // The chunk's first micro-batch (0, or its chain's first with two chains) gathers.
    const auto first = first_forward_.emplace(chunk, microbatch).first->second;
    return microbatch == first ? before_first_forward(chunk, module, issue_after) : Deps{};
  }
  return gather_for_pass(forward_pass_, microbatch, chunk, module, +1, issue_after);
}

void DataParallelOps::after_forward(std::int64_t chunk, std::int64_t module) {
  if (!shards_params()) return;
  const double params = module_params(chunk, module);
  if (params > 0 && emit_.last_compute()) {
    emit_.graph().add_free_bytes(*emit_.last_compute(), kGatheredBytesPerParam * params);
  }
}

Deps DataParallelOps::before_backward(std::int64_t microbatch, std::int64_t chunk,
                                      std::int64_t module, const Deps& issue_after) {
  if (!shards_grads()) return {};
  emit_.allocate_on_next(setting_.grad_bytes_per_param * module_params(chunk, module));
  // The embedding's backward adds gradients into its table without reading the weights.
  if (!shards_params() || module == kEmbeddingModule) return {};
  return gather_for_pass(backward_pass_, microbatch, chunk, module, -1, issue_after);
}

void DataParallelOps::after_backward(std::int64_t microbatch, std::int64_t chunk,
                                     std::int64_t module, const std::vector<GradReady>& grads) {
  if (module != kEmbeddingModule) after_forward(chunk, module);
  if (!shards_grads()) return;
  std::vector<std::size_t> buckets;
  for (std::size_t p : module_positions(chunk, module)) buckets.push_back(forward_order_[p]);
  reduce_scatter_units(microbatch, std::move(buckets), grads);
}

// Each unit's reduce-scatter waits for the last of its gradients and frees the unit's unsharded
// gradient when it ends.
void DataParallelOps::reduce_scatter_units(std::int64_t microbatch,
                                           std::vector<std::size_t> buckets,
                                           const std::vector<GradReady>& grads) {
  const auto ready_of = [&](std::size_t b) {
    OpIndex ready = 0;
    for (std::size_t u : buckets_[b].units) {
      if (u >= grads.size()) throw std::logic_error("step builder: a unit's gradient is missing");
      ready = std::max(ready, grads[u].op);
    }
    return ready;
  };
  // The stream runs them first come, first served: in the order their gradients complete.
  std::stable_sort(buckets.begin(), buckets.end(),
                   [&](std::size_t a, std::size_t b) { return ready_of(a) < ready_of(b); });
  for (std::size_t b : buckets) {
    OpTag t;
    t.microbatch = static_cast<std::int32_t>(microbatch);
    t.prefix = "dp";
    emit_.set_tag(std::move(t));
    const double bytes = setting_.grad_bytes_per_param * buckets_[b].params;
    const OpIndex scatter = emit_.collective(
        "unit " + std::to_string(b) + " grad rs", CollectiveOp::kReduceScatter, bytes,
        group_of(buckets_[b]), OpCategory::kDp, Streams::kDp, {ready_of(b)}, true, 0.0, bytes);
    reductions_.push_back(scatter);
    reduce_replicas(buckets_[b], bytes, scatter);
  }
}

}  // namespace wallsim::models
