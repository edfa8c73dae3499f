// OpEmitter: appends one rank's ops to its OpGraph, timed by the KernelTimer, labelled
// "<prefix> <name>" (e.g. "L12 fc1 fwd") with the current micro-batch and layer, and with the
// memory the caller asked the next compute op to allocate or free.
//
// PayloadTable: the deduplicated {collective op, bytes} list every communication op indexes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/step/kernel_timer.hpp"
#include "models/step/step_program.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/hw/grouped_gemm.hpp"
#include "sim/hw/kernel_flops.hpp"
#include "sim/report/op_category.hpp"

namespace wallsim::models {

using Deps = std::vector<OpIndex>;

class PayloadTable {
 public:
  std::uint32_t index(CollectiveOp op, double bytes);
  std::vector<CommPayload> release() { return std::move(payloads_); }

 private:
  std::vector<CommPayload> payloads_;
  std::map<std::pair<CollectiveOp, double>, std::uint32_t> index_;
};

// What the ops emitted next belong to.
struct OpTag {
  std::optional<std::int32_t> microbatch;
  std::optional<std::int32_t> layer;
  std::string prefix;      // "L12", "embedding", "output", "optimizer"
  bool recompute = false;  // a forward re-run for the backward: label gets " (recompute)"
};

class OpEmitter {
 public:
  OpEmitter(OpGraph& graph, KernelTimer& timer, PayloadTable& payloads, Dtype gemm_dtype);

  void set_tag(OpTag tag) { tag_ = std::move(tag); }
  const OpTag& tag() const { return tag_; }

  // A GEMM in the training precision; with fp8 each input is first cast from bf16
  // (one memory-bound kernel per input: read 2 bytes, write 1 per element).
  OpIndex gemm(std::string_view name, const GemmShape& shape, const Deps& deps = {});
  // The problems of a grouped GEMM as one op: one grouped kernel, or with `one_kernel` false a
  // loop of one GEMM kernel per problem. With fp8 each input is cast once for all problems.
  OpIndex grouped_gemm(std::string_view name, const GroupedGemmShape& shape, bool one_kernel,
                       const Deps& deps = {});
  // `rows` rows of a GEMM that communication overlap splits along M (Transformer Engine's
  // userbuffer overlap): the pieces run back to back at the efficiency of the whole GEMM, so a
  // piece takes its share of the whole GEMM's time (splitting does not re-pay wave or size
  // losses). With fp8 the weight is cast once, with the first piece.
  OpIndex gemm_piece(std::string_view name, const GemmShape& whole, std::int64_t rows,
                     bool first_piece, const Deps& deps = {});
  // Flash attention in bf16; `shapes` are the kernel calls one op stands for (context
  // parallelism splits a rank's attention into blocks), timed and counted together.
  OpIndex attention(std::string_view name, const std::vector<AttentionShape>& shapes, bool backward,
                    const Deps& deps = {});
  // A memory-bound kernel streaming `bytes` (reads plus writes) through HBM.
  OpIndex memory_bound(std::string_view name, double bytes, const Deps& deps = {},
                       OpCategory category = OpCategory::kElementwise);
  OpIndex collective(std::string_view name, CollectiveOp op, double bytes, GroupIndex group,
                     OpCategory category, StreamIndex stream, const Deps& deps,
                     bool occupies_sms = true);
  // Pipeline transfers; `tag` keeps activations and gradients between the same two ranks
  // apart (with pp = 2 both flow both ways).
  OpIndex send(std::string_view name, RankIndex peer, double bytes, StreamIndex stream,
               std::uint16_t tag, const Deps& deps);
  OpIndex recv(std::string_view name, RankIndex peer, double bytes, StreamIndex stream,
               std::uint16_t tag);

  // Memory the next compute op allocates at its start / frees at its end (bytes; adds up).
  void allocate_on_next(double bytes) { pending_alloc_bytes_ += bytes; }
  void free_on_next(double bytes) { pending_free_bytes_ += bytes; }

  // The last op added to the compute stream, if any.
  std::optional<OpIndex> last_compute() const { return last_compute_; }
  OpGraph& graph() { return graph_; }

 private:
  OpIndex add_compute(std::string_view name, OpCategory category, KernelTime time, double flops,
                      const Deps& deps);
  OpIndex add(Op op, std::string_view name, const Deps& deps);
  Op tagged(OpKind kind, OpCategory category, StreamIndex stream) const;

  OpGraph& graph_;
  KernelTimer& timer_;
  PayloadTable& payloads_;
  Dtype gemm_dtype_;
  OpTag tag_;
  double pending_alloc_bytes_ = 0;
  double pending_free_bytes_ = 0;
  std::optional<OpIndex> last_compute_;
  // Scratch reused by every add (a step adds millions of ops).
  std::string label_;
  Deps unique_deps_;
};

}  // namespace wallsim::models
