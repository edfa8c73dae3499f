// Core attention under context parallelism (mechanics.md §3): which attention blocks a rank
// computes at each step, what its CP group exchanges, and the ops of one layer's forward and
// backward.
//
// The sequence is cut into 2·cp chunks and CP rank r holds chunks r and 2·cp − 1 − r (zig-zag),
// so every rank owns an equal share of the causal triangle; with cp_load_balance false rank r
// holds the r-th contiguous cp-th.
//
//   p2p       a ring of n = cp ranks, as Transformer Engine's AttnFuncWithCPAndKVP2P runs it
//             (docs/reference/attention.md): forward: n steps, the K and V of one block
//             (2·(s/cp)·b·(g/t)·d bf16) passed to the next rank while the current block's
//             attention runs; backward: K and V, then K, V and dK, dV, then dK, dV alone
//             (twice the forward volume). Each step's blocks are kernel calls at their own
//             sizes (s' = the rank's s/cp tokens, the kv length indexes the tables):
//               balanced, forward step 0: the causal diagonal, s' queries × s' keys;
//               step i ≥ 1 with keys from an earlier rank (i ≤ r): all s' queries against the
//               first half (s'/2) of the received keys, no mask;
//               step i with keys from a later rank (i > r): the second half (s'/2) of the
//               queries against all s' received keys, no mask.
//             Backward runs the same blocks in the reverse order (the diagonal last).
//             Contiguous: rank r computes the diagonal and r whole blocks, skips the rest.
//             Each step also merges its partial result: forward, the softmax statistics
//             (log-sum-exp) after every step and the partial outputs after the ring; backward,
//             dQ and dK, dV accumulated after every step (memory-bound; cp_merge_bytes).
//   all_gather  an all-gather of K and V before the attention (exposed); backward gathers them
//             again and reduce-scatters dK, dV. A rank attends each of its chunks to the key
//             prefix it needs (balanced: rank 0's two blocks time every rank).
//   a2a       Ulysses: all-to-all of Q, K, V to whole sequences over a/(t·cp) heads, causal
//             attention, all-to-all of O back; backward dO, attention, dQ, dK, dV.
//   a2a+p2p   all-to-all over the inner a2a ranks, then a p2p ring over the outer p2p groups on
//             the inner group's sequence (s/p2p tokens, heads ÷ a2a).
//
// overlap.cp_comm false issues each ring transfer only after the previous block's attention,
// and the attention waits for it: nothing is hidden.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "models/layout.hpp"
#include "models/step/op_emitter.hpp"
#include "models/step/step_context.hpp"

namespace wallsim::models {

struct CpSetting {
  bool active = false;  // cp > 1
  std::int64_t cp = 1;
  CpLayout layout;
  std::int64_t ring_position = 0;  // this rank's index in its p2p ring
  std::int64_t cp_position = 0;    // this rank's index in its CP group
  GroupIndex cp_group = 0;         // the whole CP group (all_gather)
  GroupIndex ring_group = 0;       // the p2p ring (cp_comm_type p2p, a2a+p2p)
  GroupIndex a2a_group = 0;        // the all-to-all group (a2a, a2a+p2p)
  bool overlap = true;             // training.overlap.cp_comm
};

// The two chunks (of 2·cp) CP rank `rank` holds in the load-balanced split.
std::array<std::int64_t, 2> zigzag_chunks(std::int64_t rank, std::int64_t cp);

// One ring step of one pass on one rank.
struct CpRingStep {
  std::vector<AttentionShape> blocks;  // the attention kernel calls (none: nothing to attend)
  double merge_bytes = 0;              // HBM bytes of the step's merge kernel (0: none)
};

// One rank's attention work and its group's exchanges for one layer (bytes as nccl-tests'
// S, bf16).
struct CpAttentionPlan {
  std::vector<CpRingStep> forward;   // in forward order: the diagonal first
  std::vector<CpRingStep> backward;  // in backward order: the diagonal last
  // Forward: each step's partial output merged into the result after the ring, step order.
  std::vector<double> output_merge_bytes;
  double ring_kv_bytes = 0;    // K and V of one block: one forward ring transfer
  double a2a_qkv_bytes = 0;    // all-to-all of Q, K, V (each rank's send buffer)
  double a2a_out_bytes = 0;    // all-to-all of O
  double gather_kv_bytes = 0;  // all-gathered K and V (= the dK, dV reduce-scattered)

  std::size_t ring_steps() const { return forward.size(); }
};

// HBM bytes of the kernels that merge one ring block's partial result (CpMerge: which one).
enum class CpMerge {
  kForwardStatistics,  // the step's softmax log-sum-exp into the running one
  kForwardOutput,      // the step's partial output into the result, after the ring
  kBackwardGradients,  // the step's dQ and dK, dV into the accumulated ones
};
double cp_merge_bytes(CpMerge merge, const AttentionShape& block, bool first_step);

// `dims` is the rank's layer (s' = s/cp tokens per sequence); `position` its CP index (p2p ring
// index for the rings), used only by the contiguous split.
CpAttentionPlan cp_attention_plan(const LayerDims& dims, const CpLayout& cp, std::int64_t position);

// The backward ring's transfers in order: K, V alone; K, V with dK, dV; dK, dV alone
// (mechanics.md §3.2), in bytes. Empty when there is no ring.
std::vector<double> backward_ring_bytes(const CpAttentionPlan& plan);

class CpAttention {
 public:
  CpAttention(OpEmitter& emit, const LayerDims& dims, const CpSetting& setting);

  // Each takes the ops Q, K, V (or dO) come from and returns those the next op waits for.
  Deps forward(const Deps& producer);
  Deps backward(const Deps& producer);

 private:
  OpIndex exchange(const std::string& name, CollectiveOp op, double bytes, GroupIndex group,
                   const Deps& deps);
  std::optional<OpIndex> run_step(const CpRingStep& step, std::size_t index, bool backward,
                                  const Deps& wait);

  OpEmitter& emit_;
  CpSetting setting_;
  CpAttentionPlan plan_;
};

}  // namespace wallsim::models
