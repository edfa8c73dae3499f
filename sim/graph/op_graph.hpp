// The program of one rank for one training step: ops in program order per stream, plus
// dependencies between them.
//
// Semantics the replay implements: an op starts when it is the first unfinished op of its
// stream (streams are in-order queues, as CUDA streams are) and every op it depends on has
// ended. Dependencies only point from earlier-added ops to later ones, so a graph built this
// way has no cycles; cross-rank waits come only from collectives and transfers.
//
// Sharing. Ranks that run the same program (every rank of a pipeline stage, in full fidelity)
// differ only in which groups their collectives use and which peers they send to. `rebound`
// returns a graph that shares this one's ops, edges and labels (one immutable body, reference
// counted) and renames groups and peers through a small binding, so a 1,024-rank step holds a
// handful of bodies instead of 1,024 graphs. A shared body is frozen: `add` on a graph whose
// body is shared throws std::logic_error.
//
// Storage is compressed sparse rows, built once: each op's dependencies are appended when the
// op is (the common case), and the reverse index (dependents) and the per-stream op lists are
// derived on first use and cached in the body.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/graph/op.hpp"

namespace wallsim {

// Renames applied by a rebound graph: a collective on group `first` runs on `second`, a send or
// receive with peer `first` goes to `second`. Names not listed are kept.
struct OpBinding {
  std::vector<std::pair<GroupIndex, GroupIndex>> groups;
  std::vector<std::pair<RankIndex, RankIndex>> peers;
  bool empty() const { return groups.empty() && peers.empty(); }
};

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
  // Room for `ops` ops and `edges` dependencies without moving the ones already added (a
  // builder that knows the size of what it is about to add saves the copies and page faults of
  // growing by doubling). Reserved room that is never filled is never touched, so it costs
  // address space, not resident memory.
  void reserve(std::size_t ops, std::size_t edges);
  // Gives back the memory of reserved room the graph did not fill (a builder calls it when the
  // graph is complete; adding more afterwards still works).
  void release_spare_room();
  std::size_t edge_count() const;
  // Op `index` also frees `bytes` when it ends (a buffer whose last reader is known only after
  // the op was added).
  void add_free_bytes(OpIndex index, double bytes);

  // A graph sharing this one's body, with groups and peers renamed by `binding` (applied on
  // top of this graph's own binding). `static_bytes` is copied.
  OpGraph rebound(const OpBinding& binding) const;
  // Whether two graphs share one body (same ops and edges, possibly different bindings).
  bool shares_body_with(const OpGraph& other) const { return body_ == other.body_; }

  std::size_t size() const;
  // The op as this graph runs it: the body's op with group or peer renamed by the binding.
  // Returned by value (bind it as `const Op&`; the temporary lives as long as the reference).
  Op op(OpIndex index) const;
  // The op as the shared body holds it, group and peer not renamed: for the fields no binding
  // changes (kind, stream, durations, payload, memory), without a copy.
  const Op& shared_op(OpIndex index) const;
  // A communication op's position among the graph's communication ops (0, 1, ...), and their
  // number: per-op tables that only communication ops need are indexed by it.
  std::uint32_t comm_position(OpIndex index) const;
  std::size_t comm_count() const;
  // The same tables whole, for loops that read them per op (the replay): op i's dependents are
  // dependents[begin[i] .. begin[i + 1]); comm_positions[i] is comm_position(i).
  struct DependentIndex {
    std::span<const std::uint32_t> begin;
    std::span<const OpIndex> dependents;
  };
  DependentIndex dependent_index() const;
  // Builds the derived tables above now. They are otherwise built on first use after a change,
  // which is not thread-safe: threads that read one graph concurrently (several replays of one
  // program) need it prepared first.
  void prepare() const;
  std::span<const std::uint32_t> comm_positions() const;
  // Host issue: host_issued[i] is the host cost of ops 0..i summed (Op::host_cost), so with no
  // synchronisation in between the host finishes issuing op i at host_issued[i] after it
  // started; host_syncs lists the ops with Op::host_sync, in program order.
  std::span<const Time> host_issued() const;
  std::span<const OpIndex> host_syncs() const;
  std::vector<OpIndex> dependencies(OpIndex index) const;
  std::vector<OpIndex> dependents(OpIndex index) const;
  // Number of ops `index` depends on (its in-degree), without building the list.
  std::size_t dependency_count(OpIndex index) const;
  // Without copying: the ops `index` depends on, the ops that depend on it, a stream's ops in
  // program order. Valid until the graph is next modified.
  std::span<const OpIndex> dependency_span(OpIndex index) const;
  std::span<const OpIndex> dependent_span(OpIndex index) const;
  std::span<const OpIndex> stream_ops(StreamIndex stream) const;
  int stream_count() const;

  // Interned op names. Each name has a kernel family, itself an interned name: what reports
  // group the op's kernel under wherever it runs ("fc1 fwd" for "L12 fc1 fwd"); the builder
  // decides it (models/step/op_emitter.hpp), and a name interned without one is its own family.
  // Interning a known name returns it and keeps the family it was first given.
  std::uint32_t intern_label(std::string_view name);
  std::uint32_t intern_label(std::string_view name, std::string_view family);
  std::optional<std::uint32_t> find_label(std::string_view name) const;
  const std::string& label(std::uint32_t index) const;
  std::uint32_t label_family(std::uint32_t index) const;
  std::size_t label_count() const;

  // Bytes held for the whole step before any op runs (weights, gradients, optimizer state).
  double static_bytes = 0;

 private:
  struct Body;
  Body& mutable_body(const char* what);

  std::shared_ptr<Body> body_;
  OpBinding binding_;
};

}  // namespace wallsim
