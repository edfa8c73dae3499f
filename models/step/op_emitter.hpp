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
#include "models/step/step_context.hpp"
#include "models/step/step_program.hpp"
#include "models/training_spec.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/hw/grouped_gemm.hpp"
#include "sim/hw/host_profile.hpp"
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
  std::string prefix;      // "L12" (with `layer`), "embedding", "output", "mtp0", "optimizer"
  bool recompute = false;  // a forward re-run for the backward: label gets " (recompute)"
};

// The kernel family of an op named `name` under `tag` (OpGraph::label_family): its label
// without the numbering that tells instances of one kernel apart. A layer's prefix goes whole
// ("L12 fc1 fwd" -> "fc1 fwd": every layer runs the same kernels), other prefixes lose their
// trailing number ("mtp0 projection fwd" -> "mtp projection fwd"), and so does every word of
// the name that is a number: a GEMM's TP-overlap pieces, CP ring steps and cross-entropy
// passes ("fc2 fwd 3 cast a" -> "fc2 fwd cast a"). Micro-batches are never in a label.
// " (recompute)" stays, so the cost of recomputation shows as families of its own.
std::string kernel_family(const OpTag& tag, std::string_view name);

// How the host issues what is emitted: its costs (the profile's `host` section) and what the
// framework captures in CUDA graphs.
struct HostIssue {
  HostProfile costs;
  CudaGraphs graphs = CudaGraphs::kNone;
};

class OpEmitter {
 public:
  // GEMMs run in `gemm_dtype`; with a quantization each GEMM's inputs are first cast by a
  // memory-bound kernel (models/quantization.hpp).
  OpEmitter(OpGraph& graph, KernelTimer& timer, PayloadTable& payloads, Dtype gemm_dtype,
            Quantization quantization);

  // A new tag starts a new captured region: each layer's forward or backward is its own graph.
  void set_tag(OpTag tag) {
    tag_ = std::move(tag);
    graph_open_ = false;
  }
  const OpTag& tag() const { return tag_; }

  // Every op pays its host cost: costs.kernel_issue when issued eagerly; inside a captured
  // region the first op pays costs.graph_issue for the whole region and the rest nothing.
  // Captured: with per_layer, a transformer layer's ops (those with a layer tag) except data-
  // and pipeline-parallel communication; with full_iteration, everything but the optimizer.
  void set_host_issue(HostIssue host) { host_ = host; }
  // Ops emitted next run eagerly whatever is captured (dynamic shapes, e.g. a dropless MoE
  // dispatcher and its experts); false ends that.
  void set_eager(bool eager) {
    eager_ = eager;
    graph_open_ = false;
  }
  // The host waits for the next op to end before issuing anything after it (it reads the op's
  // result, e.g. the token counts of a dropless MoE dispatcher).
  void sync_host_on_next() { sync_next_ = true; }

  // A GEMM in the training precision; with fp8 each input is first cast from bf16
  // (one memory-bound kernel per input: read 2 bytes, write 1 per element).
  OpIndex gemm(std::string_view name, const GemmShape& shape, const Deps& deps = {});
  // The problems of a grouped GEMM as one op: one grouped kernel, or with `one_kernel` false a
  // loop of one GEMM kernel per problem. With fp8 each input is cast once for all problems.
  OpIndex grouped_gemm(std::string_view name, const GroupedGemmShape& shape, bool one_kernel,
                       const Deps& deps = {});
  // A weight-gradient GEMM. While weight gradients are deferred (schedules with W passes) it
  // is recorded instead of emitted and a placeholder comes back, which only GradReady entries
  // may hold (a placeholder among an op's dependencies is a logic error);
  // emit_weight_gradients() emits the recorded GEMMs at the W pass.
  OpIndex wgrad(std::string_view name, const GemmShape& shape, const Deps& deps = {});
  // The same for the weight gradients of a grouped GEMM (routed experts); a deferred one keeps
  // whether its ops ran eagerly (a dropless dispatcher's experts) for its W pass.
  OpIndex grouped_wgrad(std::string_view name, const GroupedGemmShape& shape, bool one_kernel,
                        const Deps& deps = {});
  // Deferral on or off; with it on, free_on_next holds the bytes back for the W pass too (the
  // layer's saved tensors stay alive until its weight gradients are computed).
  void defer_weight_gradients(bool on) { deferring_ = on; }
  bool deferring_weight_gradients() const { return deferring_; }
  static bool is_deferred_placeholder(OpIndex op) { return op >= kFirstPlaceholder; }
  struct DeferredWeightGradients {
    struct Gemm {
      OpTag tag;
      std::string name;
      GemmShape shape;
      Deps deps;
      OpIndex placeholder = 0;
      std::optional<GroupedGemmShape> grouped;  // set: a grouped GEMM (shape unused)
      bool one_kernel = true;
      bool eager = false;
    };
    std::vector<Gemm> gemms;
    double free_bytes = 0;
  };
  // The GEMMs and frees recorded since the last call.
  DeferredWeightGradients take_deferred_weight_gradients();
  // Emits `deferred` in order under their own tags, frees its bytes after the last, and
  // rewrites the placeholders in `grads` to the emitted ops.
  void emit_weight_gradients(DeferredWeightGradients deferred, std::vector<GradReady>& grads);
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
  // `kernels` small memory-bound kernels moving `bytes` between them, as one op: the bytes at
  // the bandwidth of their total, each kernel's launch gap on the device, and one host issue
  // per kernel when run eagerly (e.g. an unfused MoE router's dozens of kernels).
  OpIndex memory_bound_kernels(std::string_view name, double bytes, int kernels,
                               const Deps& deps = {});
  // `alloc_bytes` are allocated when the collective starts (its output buffer), `free_bytes`
  // freed when it ends (its input).
  OpIndex collective(std::string_view name, CollectiveOp op, double bytes, GroupIndex group,
                     OpCategory category, StreamIndex stream, const Deps& deps,
                     bool occupies_sms = true, double alloc_bytes = 0, double free_bytes = 0);
  // Pipeline transfers; `tag` keeps activations and gradients between the same two ranks
  // apart (with pp = 2 both flow both ways).
  OpIndex send(std::string_view name, RankIndex peer, double bytes, StreamIndex stream,
               std::uint16_t tag, const Deps& deps);
  OpIndex recv(std::string_view name, RankIndex peer, double bytes, StreamIndex stream,
               std::uint16_t tag);

  // A copy of `bytes` between GPU and host memory on `stream` (copy engines: it holds no SMs and
  // leaves the compute stream's memory changes alone), taking `duration`; it allocates
  // `alloc_bytes` when it starts and frees `free_bytes` when it ends.
  OpIndex host_copy(std::string_view name, double bytes, Time duration, StreamIndex stream,
                    double alloc_bytes, double free_bytes, const Deps& deps);

  // Memory the next compute op allocates at its start / frees at its end (bytes; adds up).
  void allocate_on_next(double bytes) { pending_alloc_bytes_ += bytes; }
  void free_on_next(double bytes) {
    (deferring_ ? deferred_.free_bytes : pending_free_bytes_) += bytes;
  }
  // Bytes the backward frees itself even while weight gradients are deferred: tensors no W
  // pass reads (the logits).
  void free_on_next_in_backward(double bytes) { pending_free_bytes_ += bytes; }

  // The last op added to the compute stream, if any.
  std::optional<OpIndex> last_compute() const { return last_compute_; }
  OpGraph& graph() { return graph_; }

 private:
  // `bytes`: what a memory-bound kernel streams (Op::bytes), 0 for GEMMs and attention.
  OpIndex add_compute(std::string_view name, OpCategory category, KernelTime time, double flops,
                      double bytes, const Deps& deps);
  OpIndex add(Op op, std::string_view name, const Deps& deps);
  Op tagged(OpKind kind, OpCategory category, StreamIndex stream) const;
  void assign_host_cost(Op& op);
  bool captured(OpCategory category) const;

  OpGraph& graph_;
  KernelTimer& timer_;
  PayloadTable& payloads_;
  Dtype gemm_dtype_;
  double cast_bytes_per_element_;  // 0: GEMM inputs are used as they are
  OpTag tag_;
  double pending_alloc_bytes_ = 0;
  double pending_free_bytes_ = 0;
  std::optional<OpIndex> last_compute_;
  HostIssue host_;
  bool graph_open_ = false;  // the last op was captured, in the region a new op would join
  bool eager_ = false;
  bool sync_next_ = false;
  int next_kernels_ = 1;  // kernels the next op stands for (host issues)
  static constexpr OpIndex kFirstPlaceholder = 0xF0000000u;
  bool deferring_ = false;
  DeferredWeightGradients deferred_;
  OpIndex next_placeholder_ = kFirstPlaceholder;
  // Scratch reused by every add (a step adds millions of ops).
  std::string label_;
  Deps unique_deps_;
};

}  // namespace wallsim::models
