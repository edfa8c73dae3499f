// The program of one rank for one training step: ops in program order per stream, plus
// dependencies between them (Boost.Graph keeps the edges).
//
// Semantics the replay implements: an op starts when it is the first unfinished op of its
// stream (streams are in-order queues, as CUDA streams are) and every op it depends on has
// ended. Dependencies only point from earlier-added ops to later ones, so a graph built this
// way has no cycles; cross-rank waits come only from collectives and transfers.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/graph/op.hpp"

namespace wallsim {

class OpGraph {
 public:
  OpGraph();
  ~OpGraph();
  OpGraph(OpGraph&&) noexcept;
  OpGraph& operator=(OpGraph&&) noexcept;

  // Appends `op` to the end of its stream; `dependencies` must be ops already added.
  OpIndex add(Op op, std::span<const OpIndex> dependencies = {});
  OpIndex add(Op op, std::initializer_list<OpIndex> dependencies);
  // Adds an edge before -> after (before < after).
  void add_dependency(OpIndex before, OpIndex after);

  std::size_t size() const { return ops_.size(); }
  const Op& op(OpIndex index) const { return ops_[index]; }
  std::vector<OpIndex> dependencies(OpIndex index) const;
  std::vector<OpIndex> dependents(OpIndex index) const;
  // Number of ops `index` depends on (its in-degree), without building the list.
  std::size_t dependency_count(OpIndex index) const;
  int stream_count() const { return stream_count_; }

  // Interned op names.
  std::uint32_t intern_label(std::string_view name);
  const std::string& label(std::uint32_t index) const { return labels_[index]; }
  std::size_t label_count() const { return labels_.size(); }

  // Bytes held for the whole step before any op runs (weights, gradients, optimizer state).
  double static_bytes = 0;

 private:
  struct Edges;  // Boost.Graph adjacency list
  std::vector<Op> ops_;
  std::unique_ptr<Edges> edges_;
  std::vector<std::string> labels_;
  std::map<std::string, std::uint32_t, std::less<>> label_index_;  // name -> index in labels_
  int stream_count_ = 0;
};

}  // namespace wallsim
