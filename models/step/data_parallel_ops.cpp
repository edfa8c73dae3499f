#include "models/step/data_parallel_ops.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "models/optimizer_offload.hpp"

namespace wallsim::models {
namespace {

// Megatron-LM DistributedDataParallel: bucket_size = max(40000000, 1000000 · dp_cp size).
constexpr double kMinBucketParams = 40e6;
constexpr double kBucketParamsPerRank = 1e6;
// The distributed optimizer gathers bf16 parameters.
constexpr double kParamGatherBytesPerParam = 2.0;

}  // namespace

double default_bucket_params(std::int64_t dp_cp_size) {
  return std::max(kMinBucketParams, kBucketParamsPerRank * static_cast<double>(dp_cp_size));
}

DataParallelOps::DataParallelOps(OpEmitter& emit, const DpSetting& setting,
                                 std::vector<std::vector<ParamUnit>> chunk_units)
    : emit_(emit),
      setting_(setting),
      chunk_units_(std::move(chunk_units)),
      pending_grads_(chunk_units_.size()) {
  build_buckets();
}

void DataParallelOps::build_buckets() {
  if (shards_grads()) {
    build_unit_buckets();
  } else {
    build_size_buckets();
  }
  // Parameters are gathered in forward order: chunk by chunk, each chunk's buckets reversed.
  for (std::size_t chunk = 0; chunk < chunk_units_.size(); ++chunk) {
    for (std::size_t b = buckets_.size(); b-- > 0;) {
      if (buckets_[b].chunk == static_cast<std::int64_t>(chunk)) forward_order_.push_back(b);
    }
  }
  gathers_.assign(forward_order_.size(), std::nullopt);
  if (shards_grads()) index_units();
}

void DataParallelOps::build_size_buckets() {
  for (std::size_t chunk = 0; chunk < chunk_units_.size(); ++chunk) {
    const bool bucketing =
        setting_.overlap_grad_reduce && setting_.bucketed_chunk == static_cast<std::int64_t>(chunk);
    const auto& units = chunk_units_[chunk];
    for (const bool expert : {false, true}) {
      const double size =
          default_bucket_params(expert ? setting_.expert_group_size : setting_.group_size);
      Bucket open{static_cast<std::int64_t>(chunk), 0, {}, expert};
      for (std::size_t u = 0; u < units.size(); ++u) {
        if (units[u].expert != expert) continue;
        open.params += units[u].params;
        open.units.push_back(u);
        if (bucketing && open.params >= size) {
          buckets_.push_back(open);
          open = Bucket{static_cast<std::int64_t>(chunk), 0, {}, expert};
        }
      }
      if (!open.units.empty()) buckets_.push_back(open);
    }
  }
}

void DataParallelOps::tag(const std::string& prefix) {
  OpTag t;
  t.prefix = prefix;
  emit_.set_tag(std::move(t));
}

bool DataParallelOps::reduces(const Bucket& bucket) const {
  return bucket.expert ? setting_.expert_active : setting_.active;
}

GroupIndex DataParallelOps::group_of(const Bucket& bucket) const {
  return bucket.expert ? setting_.expert_group : setting_.group;
}

OpIndex DataParallelOps::gather_bucket(std::size_t position, const Deps& deps) {
  const std::size_t bucket = forward_order_[position];
  tag("dp");
  return emit_.collective("bucket " + std::to_string(bucket) + " param ag",
                          CollectiveOp::kAllGather,
                          kParamGatherBytesPerParam * buckets_[bucket].params,
                          group_of(buckets_[bucket]), OpCategory::kDp, Streams::kDp, deps);
}

Deps DataParallelOps::before_first_forward(std::int64_t chunk, std::int64_t module,
                                           const Deps& issue_after) {
  if ((!setting_.active && !setting_.expert_active) || !setting_.distributed_optimizer ||
      shards_params() || !setting_.overlap_param_gather) {
    return {};
  }
  std::vector<std::size_t> positions;
  for (std::size_t p = 0; p < forward_order_.size(); ++p) {
    const Bucket& b = buckets_[forward_order_[p]];
    if (b.chunk != chunk || !reduces(b)) continue;
    const auto& units = chunk_units_[static_cast<std::size_t>(chunk)];
    for (std::size_t u : b.units) {
      if (units[u].module == module) {
        positions.push_back(p);
        break;
      }
    }
  }
  if (positions.empty()) return {};
  Deps issue = issue_after;
  if (const auto last = emit_.last_compute()) issue.push_back(*last);
  // The pre-hook waits for the module's buckets (dispatching any not yet dispatched), then
  // dispatches the next bucket's gather.
  const std::size_t last_needed = positions.back();
  const std::size_t dispatch_to = std::min(last_needed + 1, forward_order_.size() - 1);
  for (std::size_t p = 0; p <= dispatch_to; ++p) {
    if (!gathers_[p] && reduces(buckets_[forward_order_[p]])) gathers_[p] = gather_bucket(p, issue);
  }
  Deps waits;
  for (std::size_t p : positions) waits.push_back(*gathers_[p]);
  return waits;
}

OpIndex DataParallelOps::reduce_bucket(std::size_t bucket, const std::vector<GradReady>& grads) {
  const Bucket& b = buckets_[bucket];
  OpIndex ready = 0;
  for (std::size_t u : b.units) ready = std::max(ready, grads[u].op);
  const bool scatter = setting_.distributed_optimizer;
  tag("dp");
  const OpIndex op =
      emit_.collective("bucket " + std::to_string(bucket) + (scatter ? " grad rs" : " grad ar"),
                       scatter ? CollectiveOp::kReduceScatter : CollectiveOp::kAllReduce,
                       setting_.grad_bytes_per_param * b.params, group_of(b), OpCategory::kDp,
                       Streams::kDp, {ready});
  reductions_.push_back(op);
  reduce_replicas(b, setting_.grad_bytes_per_param * b.params, op);
  return op;
}

void DataParallelOps::reduce_replicas(const Bucket& bucket, double bytes, OpIndex scatter) {
  if (!setting_.replica_group || bucket.expert) return;
  reductions_.push_back(emit_.collective("grad replica ar", CollectiveOp::kAllReduce,
                                         bytes / static_cast<double>(setting_.shard_group_size),
                                         *setting_.replica_group, OpCategory::kDp, Streams::kDp,
                                         {scatter}));
}

void DataParallelOps::chunk_gradients_ready(std::int64_t chunk,
                                            const std::vector<GradReady>& grads) {
  const auto c = static_cast<std::size_t>(chunk);
  if (grads.size() != chunk_units_[c].size()) {
    throw std::logic_error("step builder: gradients of chunk " + std::to_string(chunk) +
                           " do not match its parameter units");
  }
  if (!setting_.active && !setting_.expert_active) return;
  if (shards_grads()) return;  // every micro-batch reduced its own (after_backward)
  if (!setting_.overlap_grad_reduce) {
    pending_grads_[c] = grads;
    return;
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].chunk == chunk && reduces(buckets_[b])) reduce_bucket(b, grads);
  }
}

void DataParallelOps::finish_step(double stage_params) {
  for (std::size_t c = 0; c < pending_grads_.size(); ++c) {
    if (pending_grads_[c].empty()) continue;
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      if (buckets_[b].chunk == static_cast<std::int64_t>(c) && reduces(buckets_[b])) {
        reduce_bucket(b, pending_grads_[c]);
      }
    }
  }
  Deps before_step = reductions_;
  if (setting_.embedding_group) {
    Deps deps = reductions_;
    if (const auto last = emit_.last_compute()) deps.push_back(*last);
    tag("dp");
    before_step.push_back(
        emit_.collective("embedding grad ar", CollectiveOp::kAllReduce,
                         setting_.grad_bytes_per_param * setting_.embedding_params,
                         *setting_.embedding_group, OpCategory::kDp, Streams::kDp, deps));
  }
  tag("optimizer");
  double expert_params = 0;
  for (const Bucket& b : buckets_) expert_params += b.expert ? b.params : 0.0;
  const double shard =
      (stage_params - expert_params) / static_cast<double>(setting_.optimizer_shards) +
      expert_params / static_cast<double>(setting_.expert_optimizer_shards);
  const Deps stepped = optimizer_step(shard, before_step);
  if (setting_.distributed_optimizer && !shards_params() && !setting_.overlap_param_gather) {
    for (std::size_t p = 0; p < forward_order_.size(); ++p) {
      if (reduces(buckets_[forward_order_[p]])) gathers_[p] = gather_bucket(p, stepped);
    }
  }
}

Deps DataParallelOps::optimizer_step(double shard, const Deps& before_step) {
  const double fraction = setting_.cpu_optimizer_fraction;
  const auto gpu_step = [&](const Deps& deps) {
    return emit_.memory_bound("step",
                              setting_.optimizer_step_bytes_per_param * shard * (1 - fraction),
                              deps, OpCategory::kOptimizer);
  };
  if (setting_.staged_state_fraction > 0) return staged_optimizer_step(shard, before_step);
  if (fraction == 0) return {gpu_step(before_step)};
  const double grad_bytes = setting_.grad_bytes_per_param;
  if (!setting_.cpu_optimizer_overlap) {
    // On the compute stream: every gradient out, the GPU's part while the CPU steps, every
    // parameter back once both are done.
    const double params = shard * fraction;
    const CpuOptimizerTimes t =
        cpu_optimizer_times(params, grad_bytes, setting_.host_link_Bps, setting_.host_memory_Bps);
    const OpIndex out = emit_.host_copy("gradients to host", params * grad_bytes,
                                        Time::from_seconds(t.gradients_to_host_s),
                                        Streams::kCompute, 0, 0, before_step);
    const OpIndex cpu = emit_.host_copy("cpu adam", 0, Time::from_seconds(t.cpu_step_s),
                                        Streams::kOptimizerOffload, 0, 0, {out});
    Deps after = {cpu};
    if (fraction < 1) after.push_back(gpu_step({out}));
    return {emit_.host_copy("parameters to device", params * kCpuOptimizerParamCopyBytes,
                            Time::from_seconds(t.params_to_device_s), Streams::kCompute, 0, 0,
                            after)};
  }
  // One CPU optimizer per parameter: gradient copies on one stream (which first waits for the
  // compute stream, as the hybrid optimizer's d2h stream does), CPU steps as each copy lands,
  // each parameter copied back on another stream as its step ends.
  Deps gradients_final = before_step;
  if (const auto last = emit_.last_compute()) gradients_final.push_back(*last);
  std::size_t pieces = 0;
  for (const auto& units : chunk_units_) pieces += units.size();
  pieces = std::max<std::size_t>(pieces, 1);
  const double params = shard * fraction / static_cast<double>(pieces);
  const CpuOptimizerTimes t =
      cpu_optimizer_times(params, grad_bytes, setting_.host_link_Bps, setting_.host_memory_Bps);
  Deps stepped;
  if (fraction < 1) stepped.push_back(gpu_step(before_step));
  std::optional<OpIndex> last;
  for (std::size_t k = 0; k < pieces; ++k) {
    const OpIndex out = emit_.host_copy("gradients to host", params * grad_bytes,
                                        Time::from_seconds(t.gradients_to_host_s),
                                        Streams::kOffloadOut, 0, 0, gradients_final);
    const OpIndex cpu = emit_.host_copy("cpu adam", 0, Time::from_seconds(t.cpu_step_s),
                                        Streams::kOptimizerOffload, 0, 0, {out});
    last =
        emit_.host_copy("parameters to device", params * kCpuOptimizerParamCopyBytes,
                        Time::from_seconds(t.params_to_device_s), Streams::kOffloadIn, 0, 0, {cpu});
  }
  stepped.push_back(*last);
  return stepped;
}

Deps DataParallelOps::staged_optimizer_step(double shard, const Deps& before_step) {
  const double fraction = setting_.staged_state_fraction;
  const double staged = shard * fraction;
  const StateStaging s = state_staging(setting_.precision, staged, setting_.state_chunk_mb);
  const auto copy_time = [&](double bytes) {
    return Time::from_seconds(bytes / setting_.host_link_Bps);
  };
  // The resident state steps first while the staged state comes back.
  Deps stepped;
  if (fraction < 1) {
    stepped.push_back(emit_.memory_bound("step",
                                         setting_.optimizer_step_bytes_per_param * (shard - staged),
                                         before_step, OpCategory::kOptimizer));
  }
  Deps gradients_final = before_step;
  if (const auto last = emit_.last_compute()) gradients_final.push_back(*last);
  emit_.host_copy("optimizer masters to device", s.master_bytes, copy_time(s.master_bytes),
                  Streams::kOffloadIn, s.master_bytes, 0, gradients_final);
  // Moments by chunk through two windows: chunk k's copy in waits for chunk k − 2's copy out.
  const auto chunks = static_cast<std::size_t>(std::ceil(s.moment_bytes / s.chunk_bytes - 1e-9));
  const double chunk_params = staged / static_cast<double>(chunks);
  const double chunk_bytes = s.moment_bytes / static_cast<double>(chunks);
  std::vector<OpIndex> out;
  for (std::size_t k = 0; k < chunks; ++k) {
    Deps in_deps = gradients_final;
    if (k >= 2) in_deps.push_back(out[k - 2]);
    const OpIndex in =
        emit_.host_copy("optimizer state to device", chunk_bytes, copy_time(chunk_bytes),
                        Streams::kOffloadIn, chunk_bytes, 0, in_deps);
    const OpIndex step =
        emit_.memory_bound("step", setting_.optimizer_step_bytes_per_param * chunk_params, {in},
                           OpCategory::kOptimizer);
    stepped.push_back(step);
    if (setting_.state_chunk_mb > 0) {
      out.push_back(emit_.host_copy("optimizer state to host", chunk_bytes, copy_time(chunk_bytes),
                                    Streams::kOffloadOut, 0, chunk_bytes, {step}));
    }
  }
  // The masters, and without chunks the moments, go back to the host at the optimizer-to-forward
  // boundary. Megatron overlaps that copy with the next step's first forward; the simulated step
  // ends with it.
  const double returned = s.master_bytes + (setting_.state_chunk_mb > 0 ? 0.0 : s.moment_bytes);
  emit_.host_copy("optimizer state to host", returned, copy_time(returned),
                  Streams::kOptimizerOffload, 0, returned, stepped);
  return stepped;
}

}  // namespace wallsim::models
