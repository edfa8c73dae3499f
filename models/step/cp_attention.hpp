// Core attention under context parallelism (mechanics.md §3): which attention blocks a rank
// computes at each step, what its CP group exchanges, and the ops of one layer's forward and
// backward.
//
// The sequence is cut into 2·cp chunks and CP rank r holds chunks r and 2·cp − 1 − r (zig-zag),
// so every rank owns an equal share of the causal triangle; with cp_load_balance false rank r
// holds the r-th contiguous cp-th.
//
//   p2p       a ring of n = cp ranks; forward: n steps, the K and V of one block
//             (2·(s/cp)·b·(g/t)·d bf16) passed to the next rank while the current block's
//             attention runs; backward: K and V, then K, V and dK, dV, then dK, dV alone
//             (twice the forward volume). Balanced: step 0 the causal diagonal block, every
//             later step half a block (the rank's queries against half a received block, the
//             shape with the shorter key range, which paces the lockstep ring). Contiguous:
//             rank r computes the diagonal and r whole blocks, skips the rest.
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

// One rank's attention work and its group's exchanges for one layer (bytes as nccl-tests'
// S, bf16).
struct CpAttentionPlan {
  std::vector<std::vector<AttentionShape>> steps;  // kernel calls per ring step
  double ring_kv_bytes = 0;    // K and V of one block: one forward ring transfer
  double a2a_qkv_bytes = 0;    // all-to-all of Q, K, V (each rank's send buffer)
  double a2a_out_bytes = 0;    // all-to-all of O
  double gather_kv_bytes = 0;  // all-gathered K and V (= the dK, dV reduce-scattered)

  std::size_t ring_steps() const { return steps.size(); }
};

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

  OpEmitter& emit_;
  CpSetting setting_;
  CpAttentionPlan plan_;
};

}  // namespace wallsim::models
