#include "sim/graph/op_graph.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <boost/graph/adjacency_list.hpp>

namespace wallsim {

// Bidirectional so that both an op's dependencies (in-edges) and its dependents (out-edges) can
// be listed; vecS keeps edges in insertion order, so listings are deterministic.
struct OpGraph::Edges {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS> graph;
};

OpGraph::OpGraph() : edges_(std::make_unique<Edges>()) {}
OpGraph::~OpGraph() = default;
OpGraph::OpGraph(OpGraph&&) noexcept = default;
OpGraph& OpGraph::operator=(OpGraph&&) noexcept = default;

OpIndex OpGraph::add(Op op, std::span<const OpIndex> dependencies) {
  const auto index = static_cast<OpIndex>(ops_.size());
  // Validate before mutating so that a rejected call leaves the graph unchanged.
  for (const OpIndex before : dependencies) {
    if (before >= index) {
      throw std::invalid_argument("OpGraph::add: dependency " + std::to_string(before) +
                                  " is not an op already added (next index is " +
                                  std::to_string(index) + ")");
    }
  }
  stream_count_ = std::max(stream_count_, static_cast<int>(op.stream) + 1);
  ops_.push_back(op);
  boost::add_vertex(edges_->graph);
  for (const OpIndex before : dependencies) boost::add_edge(before, index, edges_->graph);
  return index;
}

OpIndex OpGraph::add(Op op, std::initializer_list<OpIndex> dependencies) {
  return add(op, std::span<const OpIndex>(dependencies.begin(), dependencies.size()));
}

void OpGraph::add_dependency(OpIndex before, OpIndex after) {
  if (after >= ops_.size()) {
    throw std::invalid_argument("OpGraph::add_dependency: op " + std::to_string(after) +
                                " does not exist (graph has " + std::to_string(ops_.size()) +
                                " ops)");
  }
  // Edges only point forward, which is what keeps every graph acyclic.
  if (before >= after) {
    throw std::invalid_argument("OpGraph::add_dependency: " + std::to_string(before) + " -> " +
                                std::to_string(after) + " does not point to a later op");
  }
  boost::add_edge(before, after, edges_->graph);
}

std::vector<OpIndex> OpGraph::dependencies(OpIndex index) const {
  std::vector<OpIndex> result;
  for (const auto edge : boost::make_iterator_range(boost::in_edges(index, edges_->graph))) {
    result.push_back(static_cast<OpIndex>(boost::source(edge, edges_->graph)));
  }
  return result;
}

std::vector<OpIndex> OpGraph::dependents(OpIndex index) const {
  std::vector<OpIndex> result;
  for (const auto edge : boost::make_iterator_range(boost::out_edges(index, edges_->graph))) {
    result.push_back(static_cast<OpIndex>(boost::target(edge, edges_->graph)));
  }
  return result;
}

std::size_t OpGraph::dependency_count(OpIndex index) const {
  return boost::in_degree(index, edges_->graph);
}

std::uint32_t OpGraph::intern_label(std::string_view name) {
  const auto found = label_index_.find(name);
  if (found != label_index_.end()) return found->second;
  const auto index = static_cast<std::uint32_t>(labels_.size());
  labels_.emplace_back(name);
  label_index_.emplace(labels_.back(), index);
  return index;
}

}  // namespace wallsim
