#include "models/step/tp_linear.hpp"

#include <algorithm>

namespace wallsim::models {
namespace {

// Transformer Engine's "pipeline" reduce-scatter overlap splits the GEMM in 4 (num_splits = 4
// for proj_fprop and fc2_fprop in TE's initialize_ub defaults; mechanics.md §2.2).
constexpr std::int64_t kPipelineSplits = 4;

// `rows` split into `pieces` parts that differ by at most one row.
std::vector<std::int64_t> split_rows(std::int64_t rows, std::int64_t pieces) {
  std::vector<std::int64_t> parts;
  for (std::int64_t i = 0; i < pieces; ++i) {
    parts.push_back(rows / pieces + (i < rows % pieces ? 1 : 0));
  }
  return parts;
}

std::string piece_name(const std::string& name, std::size_t piece) {
  return name + " " + std::to_string(piece);
}

}  // namespace

GemmShape dgrad_shape(const GemmShape& f) {
  return {f.m, f.k, f.n, f.batch};
}

GemmShape wgrad_shape(const GemmShape& f) {
  return {f.k, f.n, f.m, f.batch};
}

TpLinear::TpLinear(OpEmitter& emit, const TpSetting& tp, double collective_bytes)
    : emit_(emit), tp_(tp), collective_bytes_(collective_bytes) {}

// A collective launched at this point of the program waits for the compute op before it, as
// a NCCL call queued after that kernel does.
Deps TpLinear::with_producer(Deps deps) const {
  if (const auto last = emit_.last_compute()) deps.push_back(*last);
  return deps;
}

OpIndex TpLinear::collective(const std::string& name, CollectiveOp op, double bytes, Deps deps,
                             bool occupies_sms) {
  return emit_.collective(name, op, bytes, tp_.group, OpCategory::kTp, Streams::kTp, deps,
                          occupies_sms);
}

std::pair<OpIndex, OpIndex> TpLinear::ring_gathered_gemm(const std::string& gemm_name,
                                                         const GemmShape& shape, const Deps& deps) {
  const Deps producer = with_producer(deps);
  const auto rows = split_rows(shape.m, tp_.tp);
  std::vector<OpIndex> steps;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    steps.push_back(collective(piece_name(gemm_name + " ring", i), CollectiveOp::kSendRecv,
                               collective_bytes_ / static_cast<double>(tp_.tp), producer,
                               /*occupies_sms=*/false));
  }
  OpIndex last_gemm = emit_.gemm_piece(piece_name(gemm_name, 0), shape, rows[0], true, deps);
  for (std::size_t i = 1; i < rows.size(); ++i) {
    last_gemm = emit_.gemm_piece(piece_name(gemm_name, i), shape, rows[i], false, {steps[i - 1]});
  }
  return {last_gemm, steps.empty() ? last_gemm : steps.back()};
}

// The all-gather of S feeding a GEMM: plain (the GEMM waits for all of it) or ring-exchanged.
OpIndex TpLinear::gathered_gemm(const std::string& gemm_name, const GemmShape& shape,
                                const Deps& deps, std::optional<OpIndex>* last_comm) {
  if (tp_.overlap) {
    const auto [gemm, comm] = ring_gathered_gemm(gemm_name, shape, deps);
    if (last_comm) *last_comm = comm;
    return gemm;
  }
  const OpIndex gather = collective(gemm_name + " ag", CollectiveOp::kAllGather, collective_bytes_,
                                    with_producer(deps));
  if (last_comm) *last_comm = gather;
  return emit_.gemm(gemm_name, shape, {gather});
}

OpIndex TpLinear::column_forward(const std::string& name, const GemmShape& shape,
                                 const Deps& deps) {
  if (!tp_.active || !tp_.sequence_parallel) return emit_.gemm(name + " fwd", shape, deps);
  return gathered_gemm(name + " fwd", shape, deps, nullptr);
}

OpIndex TpLinear::pipelined_reduce_scatter(const std::string& name, const GemmShape& shape,
                                           const Deps& deps) {
  const auto rows = split_rows(shape.m, kPipelineSplits);
  OpIndex last = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const OpIndex gemm = emit_.gemm_piece(piece_name(name + " fwd", i), shape, rows[i], i == 0,
                                          i == 0 ? deps : Deps{});
    const double share = static_cast<double>(rows[i]) / static_cast<double>(shape.m);
    last = collective(piece_name(name + " rs", i), CollectiveOp::kReduceScatter,
                      collective_bytes_ * share, {gemm});
  }
  return last;
}

OpIndex TpLinear::row_forward(const std::string& name, const GemmShape& shape, const Deps& deps) {
  if (!tp_.active) return emit_.gemm(name + " fwd", shape, deps);
  if (tp_.sequence_parallel && tp_.overlap) return pipelined_reduce_scatter(name, shape, deps);
  const OpIndex gemm = emit_.gemm(name + " fwd", shape, deps);
  if (tp_.sequence_parallel) {
    return collective(name + " rs", CollectiveOp::kReduceScatter, collective_bytes_, {gemm});
  }
  return collective(name + " ar", CollectiveOp::kAllReduce, collective_bytes_, {gemm});
}

LinearBackward TpLinear::row_backward(const std::string& name, const GemmShape& shape,
                                      const Deps& deps) {
  if (!tp_.active || !tp_.sequence_parallel) {
    const OpIndex dgrad = emit_.gemm(name + " dgrad", dgrad_shape(shape), deps);
    return {dgrad, emit_.wgrad(name + " wgrad", wgrad_shape(shape))};
  }
  // The grad-output is sequence-sharded (the conjugate of the forward reduce-scatter): gather
  // it for the dgrad; the wgrad reuses the gathered tensor.
  std::optional<OpIndex> gathered;
  const OpIndex dgrad = gathered_gemm(name + " dgrad", dgrad_shape(shape), deps, &gathered);
  return {dgrad, emit_.wgrad(name + " wgrad", wgrad_shape(shape), {*gathered})};
}

LinearBackward TpLinear::column_backward(const std::string& name, const GemmShape& shape,
                                         const Deps& deps) {
  if (!tp_.active) {
    const OpIndex dgrad = emit_.gemm(name + " dgrad", dgrad_shape(shape), deps);
    return {dgrad, emit_.wgrad(name + " wgrad", wgrad_shape(shape))};
  }
  if (!tp_.sequence_parallel) {
    const OpIndex dgrad = emit_.gemm(name + " dgrad", dgrad_shape(shape), deps);
    const OpIndex reduce =
        collective(name + " grad ar", CollectiveOp::kAllReduce, collective_bytes_, {dgrad});
    return {reduce, emit_.wgrad(name + " wgrad", wgrad_shape(shape))};
  }
  // Only the sequence shard of the input was saved: re-gather it beside the dgrad GEMM.
  const OpIndex input = collective(name + " input ag", CollectiveOp::kAllGather, collective_bytes_,
                                   with_producer(deps));
  const OpIndex dgrad = emit_.gemm(name + " dgrad", dgrad_shape(shape), deps);
  const OpIndex scatter =
      collective(name + " grad rs", CollectiveOp::kReduceScatter, collective_bytes_, {dgrad});
  return {scatter, emit_.wgrad(name + " wgrad", wgrad_shape(shape), {input})};
}

}  // namespace wallsim::models
