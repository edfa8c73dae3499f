// One training step as per-rank op graphs, ready for the replay.
//
// `build_step` turns a validated RunConfig into the OpGraph of every simulated rank (all of them
// in `full` fidelity; one per pipeline stage in `symmetric`, since the TP, CP and DP peers of a
// dense layer run the same program under the same load), the communication groups those graphs
// use and the payloads (op and bytes) each communication moves. Collectives name a replay group
// (its simulated members) and carry every global rank of the real group, so the network still
// moves the traffic of all of them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/memory.hpp"
#include "models/run_config.hpp"
#include "sim/graph/op_graph.hpp"
#include "sim/hw/gpu_model.hpp"
#include "sim/network/collective/collective.hpp"

namespace wallsim::models {

// Stream indices of a rank (sim/graph streams are in-order queues).
struct Streams {
  static constexpr StreamIndex kCompute = 0;
  static constexpr StreamIndex kTp = 1;
  static constexpr StreamIndex kDp = 2;
  static constexpr StreamIndex kPpSendForward = 3;
  static constexpr StreamIndex kPpSendBackward = 4;
  static constexpr StreamIndex kPpRecvForward = 5;
  static constexpr StreamIndex kPpRecvBackward = 6;
  static constexpr StreamIndex kCp = 7;
  static constexpr StreamIndex kEp = 8;
  static constexpr StreamIndex kDpGather = 9;     // ZeRO-3's parameter all-gathers
  static constexpr StreamIndex kOffloadOut = 10;  // activations copied to host memory
  static constexpr StreamIndex kOffloadIn = 11;   // and back
  // Optimizer offload (training.offload): the CPU's Adam steps, or the staged state's return.
  static constexpr StreamIndex kOptimizerOffload = 12;
  // A stage's pipeline transfers with its second neighbour of the same kind (the V shapes and
  // DualPipe send activations and gradients both ways): its own streams, so that a transfer
  // waiting for one neighbour never holds up another's, as a batched isend/irecv progresses.
  static constexpr StreamIndex kPpSendForward2 = 13;
  static constexpr StreamIndex kPpSendBackward2 = 14;
  static constexpr StreamIndex kPpRecvForward2 = 15;
  static constexpr StreamIndex kPpRecvBackward2 = 16;
};

// Every stream with its name in traces and reports, by index.
struct StreamInfo {
  StreamIndex index;
  const char* name;
};
inline constexpr std::array<StreamInfo, 17> kStreams{{
    {Streams::kCompute, "compute"},
    {Streams::kTp, "tp"},
    {Streams::kDp, "dp"},
    {Streams::kPpSendForward, "pp send fwd"},
    {Streams::kPpSendBackward, "pp send bwd"},
    {Streams::kPpRecvForward, "pp recv fwd"},
    {Streams::kPpRecvBackward, "pp recv bwd"},
    {Streams::kCp, "cp"},
    {Streams::kEp, "ep"},
    {Streams::kDpGather, "dp gather"},
    {Streams::kOffloadOut, "offload d2h"},
    {Streams::kOffloadIn, "offload h2d"},
    {Streams::kOptimizerOffload, "optimizer offload"},
    {Streams::kPpSendForward2, "pp send fwd 2"},
    {Streams::kPpSendBackward2, "pp send bwd 2"},
    {Streams::kPpRecvForward2, "pp recv fwd 2"},
    {Streams::kPpRecvBackward2, "pp recv bwd 2"},
}};
static_assert([] {
  for (std::size_t i = 0; i < kStreams.size(); ++i) {
    if (kStreams[i].index != i) return false;
  }
  return true;
}());

struct CommPayload {
  CollectiveOp op = CollectiveOp::kAllReduce;  // kSendRecv for pipeline transfers
  double bytes = 0;                            // S as nccl-tests counts it
};

struct StepProgram {
  std::vector<OpGraph> graphs;                 // one per simulated rank
  std::vector<std::int64_t> global_rank;       // simulated rank -> global GPU id
  std::vector<std::int64_t> stage;             // simulated rank -> pipeline stage
  std::vector<std::vector<RankIndex>> groups;  // replay group -> simulated members
  std::vector<std::vector<int>> group_ranks;   // replay group -> every global rank
  std::vector<CommPayload> payloads;           // Op::payload indexes this
  std::vector<double> model_flops;             // per simulated rank, one step, no recompute
  std::vector<double> hardware_flops;          // the same with recompute
  // Per simulated rank: the other ranks of its class as offsets from its global rank (0 first;
  // just {0} in full fidelity). The network charges a collective's copies on them.
  std::vector<std::vector<int>> class_offsets;
  MemoryReport memory;  // the analytical memory of every stage (models/memory.hpp)
};

StepProgram build_step(const RunConfig& config, const GpuModel& gpu, Fidelity fidelity);

// The global ranks build_step simulates (StepProgram::global_rank), known before building.
std::vector<std::int64_t> simulated_global_ranks(const Layout& layout, Fidelity fidelity);

}  // namespace wallsim::models
