// One operation of a rank's step: a kernel, a collective, or one side of a point-to-point
// transfer, plus the memory it allocates and frees.
//
// Ops know nothing of LLMs: what a GEMM is, or which bytes a collective moves, lives in the
// builder (models/) and the CommService that times communication; an op only carries its
// durations, an opaque payload index for communication, and labels for reports.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/core/time.hpp"

namespace wallsim {

using RankIndex = std::int32_t;    // a simulated rank, 0..ranks-1
using OpIndex = std::uint32_t;     // an op within its rank's graph
using StreamIndex = std::uint8_t;  // a stream within a rank (0 is conventionally compute)
using GroupIndex = std::uint32_t;  // a communication group (Replay's group table)

enum class OpKind : std::uint8_t {
  kCompute,     // runs for `duration` on its stream
  kCollective,  // starts when every member of `group` has reached it; ends when the network says
  kSend,        // one side of a transfer to `peer`; matched with the peer's kRecv of its tag
  kRecv,        // one side of a transfer from `peer` with `tag`
};

struct Op {
  // What the replay reads for every op comes first (the first 64 bytes); labels and report fields
  // after.
  OpKind kind = OpKind::kCompute;
  StreamIndex stream = 0;
  std::uint16_t category = 0;  // the builder's classification (gemm, attention, tp, dp, ...)
  std::uint32_t label = 0;     // OpGraph::label(label): the op's name, for reports

  // Compute ops: duration alone, and while a communication kernel holds SMs on this rank.
  Time duration;
  Time duration_contended;

  // The host (the rank's CPU thread) issues ops in program order (op index), spending
  // `host_cost` on each (framework dispatch plus kernel or graph launch); an op cannot start
  // before the host has issued it. With `host_sync` the host, having issued the op, waits until
  // it ends before issuing the next (a stream synchronize, or a device-to-host copy the host
  // reads).
  Time host_cost;

  // Memory: allocated when the op starts, freed when it ends (bytes).
  double alloc_bytes = 0;
  double free_bytes = 0;

  // Communication ops.
  GroupIndex group = 0;       // kCollective: index into the replay's groups
  std::uint32_t payload = 0;  // what to move: an index the CommService understands
  RankIndex peer = 0;         // kSend / kRecv: the other rank
  std::uint16_t tag = 0;      // kSend / kRecv: sends match receives of the same tag only
  bool occupies_sms = true;   // a communication kernel on SMs (false: copy engine)
  bool host_sync = false;     // see host_cost

  std::optional<std::int32_t> microbatch;
  std::optional<std::int32_t> layer;
  double flops = 0;  // compute ops: arithmetic done, for reports
  // Compute ops: bytes a memory-bound kernel streams through HBM (reads plus writes), for
  // reports; 0 for GEMMs and attention, which are counted by `flops`.
  float bytes = 0;
};

// A step holds millions of ops (an MoE sweep point several graphs of them at once): a field
// that makes Op larger costs every sweep its memory. 96 bytes on LP64 targets (4 of them the
// tail padding after `bytes`).
static_assert(sizeof(Op) <= 96, "Op grew: pack a new field into existing padding");

}  // namespace wallsim
