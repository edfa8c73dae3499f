// The ops of Megatron's tensor-parallel linears with the TP collectives around them
// (docs/reference/mechanics.md §1.1, §2).
//
// Column-parallel (QKV, FC1, output layer) and row-parallel (projection, FC2) linears; every
// collective moves S = [s', b, h]·2 bytes over the TP group, on stream kTp, category kTp, and
// the op that consumes its result depends on it.
//
//  forward, no SP      column: GEMM (identity)          row: GEMM → all-reduce
//  forward, SP         column: all-gather → GEMM        row: GEMM → reduce-scatter
//  backward, no SP     row: dgrad, wgrad                column: dgrad → async all-reduce of the
//                                                        grad-input beside the wgrad GEMM
//  backward, SP        row: all-gather of grad-output → dgrad, wgrad
//                      column: re-all-gather of the saved input beside dgrad (the wgrad needs
//                      it) → dgrad → reduce-scatter of the grad-input beside the wgrad GEMM
//
// With TP comm overlap (Transformer Engine userbuffers, TE's default mapping, §2.2):
//  * an all-gather feeding a GEMM (qkv/fc1 fprop, proj/fc2 dgrad) is a ring exchange: the GEMM
//    splits into t pieces along the sequence, the local piece runs at once, piece i waits for
//    ring step i, a send/recv of one chunk S/t to the ring neighbour (payload kSendRecv over the
//    TP group) on the copy engine (occupies_sms = false);
//  * a reduce-scatter after a GEMM (proj/fc2 fprop) is "pipeline": the GEMM splits into 4
//    pieces, each followed by a reduce-scatter of its S/4 on 16 SMs (occupies_sms = true), so
//    the next piece runs contended and only the last chunk is exposed;
//  * the backward bulk overlaps are the ones above.
#pragma once

#include <string>

#include "models/step/op_emitter.hpp"
#include "models/step/step_context.hpp"

namespace wallsim::models {

struct LinearBackward {
  OpIndex grad_input;  // the op the rest of the backward waits for (a collective or the dgrad)
  OpIndex wgrad;       // the weight-gradient GEMM: the weight's gradient is ready after it
};

class TpLinear {
 public:
  // `collective_bytes` is S of every collective (the [s', b, h] activation in bf16).
  TpLinear(OpEmitter& emit, const TpSetting& tp, double collective_bytes);

  // Forward GEMM shapes: m tokens, n output width, k input width (all per rank).
  OpIndex column_forward(const std::string& name, const GemmShape& shape, const Deps& deps = {});
  OpIndex row_forward(const std::string& name, const GemmShape& shape, const Deps& deps = {});
  LinearBackward column_backward(const std::string& name, const GemmShape& shape,
                                 const Deps& deps = {});
  LinearBackward row_backward(const std::string& name, const GemmShape& shape,
                              const Deps& deps = {});

 private:
  OpIndex collective(const std::string& name, CollectiveOp op, double bytes, Deps deps,
                     bool occupies_sms = true);
  // Ring-exchanged all-gather into a GEMM: returns the last GEMM piece and its last ring step.
  std::pair<OpIndex, OpIndex> ring_gathered_gemm(const std::string& gemm_name,
                                                 const GemmShape& shape, const Deps& deps);
  OpIndex gathered_gemm(const std::string& gemm_name, const GemmShape& shape, const Deps& deps,
                        std::optional<OpIndex>* last_comm);
  OpIndex pipelined_reduce_scatter(const std::string& name, const GemmShape& shape,
                                   const Deps& deps);
  Deps with_producer(Deps deps) const;

  OpEmitter& emit_;
  TpSetting tp_;
  double collective_bytes_;
};

// dX of a forward GEMM {m, n, k}: m × k with inner dimension n. dW: k × n with inner m.
GemmShape dgrad_shape(const GemmShape& forward);
GemmShape wgrad_shape(const GemmShape& forward);

}  // namespace wallsim::models
