// What the trace and timeline writers read: the ranks to show, each with its op graph and its
// replay records, the stream names, and a description of every communication op.
//
// models/run builds it from a simulation. The writers see only this adapter, so where the
// per-op records come from (every rank, or a bounded set kept in full fidelity) can change
// without touching them. Graphs and traces are borrowed: they must outlive the TraceInput.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/graph/op_graph.hpp"
#include "sim/graph/replay.hpp"

namespace wallsim {

// A communication op as the reports show it.
struct CommDetail {
  std::string op;                // "all_reduce", "all_gather", ..., "send_recv"
  double bytes = 0;              // S as nccl-tests counts it
  double wire_bytes = 0;         // what this rank sends (all-reduce: 2(n-1)/n S)
  int ranks = 0;                 // members of the real group (2 for a transfer)
  bool crosses_domains = false;  // traffic leaves the NVLink domain (network), not NVLink only
};

struct TraceRank {
  std::string name;         // coordinates, e.g. "pp2 tp0 cp0 dp0"
  int id = 0;               // global rank: the trace's process id
  int stage = 0;            // pipeline stage
  RankIndex simulated = 0;  // index in the replay: what collectives and transfers refer to
  const OpGraph* graph = nullptr;
  const RankTrace* trace = nullptr;
};

struct TraceInput {
  std::vector<TraceRank> ranks;
  std::vector<std::string> stream_names;  // by StreamIndex; "stream N" when missing
  // Describes a communication op (collective, send or receive) of `rank`.
  std::function<CommDetail(const TraceRank& rank, const Op& op)> comm_detail;
  double step_s = 0;

  std::string stream_name(StreamIndex stream) const {
    return stream < stream_names.size() ? stream_names[stream] : "stream " + std::to_string(stream);
  }
};

}  // namespace wallsim
