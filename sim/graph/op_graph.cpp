#include "sim/graph/op_graph.hpp"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "sim/core/table_arena.hpp"

namespace wallsim {
namespace {

// The per-op tables of a large graph (millions of ops at pipeline depth 64 with hundreds of
// micro-batches) on huge pages: written once, front to back.
template <typename T>
using OpTable = std::vector<T, HugePageAllocator<T>>;

// Counting sort of `edges` by one endpoint into CSR form: offsets (size n + 1) and the other
// endpoints. Stable, so each op's list keeps the order its edges were added in.
template <typename Key, typename Value>
void build_csr(const OpTable<std::pair<OpIndex, OpIndex>>& edges, std::size_t n, Key key,
               Value value, OpTable<std::uint32_t>& begin, OpTable<OpIndex>& out) {
  begin.assign(n + 1, 0);
  for (const auto& e : edges) ++begin[key(e) + 1];
  for (std::size_t i = 0; i < n; ++i) begin[i + 1] += begin[i];
  out.resize(edges.size());
  std::vector<std::uint32_t> cursor(begin.begin(), begin.end() - 1);
  for (const auto& e : edges) out[cursor[key(e)]++] = value(e);
}

}  // namespace

struct OpGraph::Body {
  OpTable<Op> ops;
  OpTable<std::pair<OpIndex, OpIndex>> edges;  // (before, after) in the order added
  std::deque<std::string> labels;  // a deque: the names do not move, so views into them last
  std::unordered_map<std::string_view, std::uint32_t> label_index;  // name -> index in labels
  std::vector<std::uint32_t> label_families;                        // per label: its family
  int stream_count = 0;

  // Derived on first use after a change (see `index`).
  struct Index {
    OpTable<std::uint32_t> dependency_begin, dependent_begin;
    OpTable<OpIndex> dependencies, dependents;
    std::vector<std::vector<OpIndex>> stream_ops;
    OpTable<std::uint32_t> comm_position;  // per op; 0 for compute ops
    std::uint32_t comm_count = 0;
    OpTable<Time> host_issued;  // per op: host_cost summed over ops 0..i
    std::vector<OpIndex> host_syncs;
  };
  mutable std::unique_ptr<Index> cached;

  const Index& index() const {
    if (!cached) {
      auto built = std::make_unique<Index>();
      const std::size_t n = ops.size();
      build_csr(
          edges, n, [](const auto& e) { return e.second; }, [](const auto& e) { return e.first; },
          built->dependency_begin, built->dependencies);
      build_csr(
          edges, n, [](const auto& e) { return e.first; }, [](const auto& e) { return e.second; },
          built->dependent_begin, built->dependents);
      built->stream_ops.resize(static_cast<std::size_t>(stream_count));
      for (OpIndex i = 0; i < n; ++i) built->stream_ops[ops[i].stream].push_back(i);
      built->comm_position.resize(n);
      for (OpIndex i = 0; i < n; ++i) {
        if (ops[i].kind != OpKind::kCompute) built->comm_position[i] = built->comm_count++;
      }
      built->host_issued.resize(n);
      Time host = Time::zero();
      for (OpIndex i = 0; i < n; ++i) {
        host = host + ops[i].host_cost;
        built->host_issued[i] = host;
        if (ops[i].host_sync) built->host_syncs.push_back(i);
      }
      cached = std::move(built);
    }
    return *cached;
  }
};

OpGraph::OpGraph() : body_(std::make_shared<Body>()) {}
OpGraph::~OpGraph() = default;
OpGraph::OpGraph(OpGraph&&) noexcept = default;
OpGraph& OpGraph::operator=(OpGraph&&) noexcept = default;

OpGraph::Body& OpGraph::mutable_body(const char* what) {
  if (body_.use_count() > 1 || !binding_.empty()) {
    throw std::logic_error(std::string("OpGraph::") + what +
                           ": the graph shares its body with a rebound graph");
  }
  body_->cached.reset();
  return *body_;
}

void OpGraph::add_free_bytes(OpIndex index, double bytes) {
  if (index >= size()) {
    throw std::invalid_argument("OpGraph::add_free_bytes: op " + std::to_string(index) +
                                " does not exist (graph has " + std::to_string(size()) + " ops)");
  }
  mutable_body("add_free_bytes").ops[index].free_bytes += bytes;
}

OpIndex OpGraph::add(Op op, std::span<const OpIndex> dependencies) {
  const auto index = static_cast<OpIndex>(body_->ops.size());
  // Validate before mutating so that a rejected call leaves the graph unchanged.
  for (const OpIndex before : dependencies) {
    if (before >= index) {
      throw std::invalid_argument("OpGraph::add: dependency " + std::to_string(before) +
                                  " is not an op already added (next index is " +
                                  std::to_string(index) + ")");
    }
  }
  Body& body = mutable_body("add");
  body.stream_count = std::max(body.stream_count, static_cast<int>(op.stream) + 1);
  body.ops.push_back(op);
  for (const OpIndex before : dependencies) body.edges.emplace_back(before, index);
  return index;
}

OpIndex OpGraph::add(Op op, std::initializer_list<OpIndex> dependencies) {
  return add(op, std::span<const OpIndex>(dependencies.begin(), dependencies.size()));
}

void OpGraph::add_dependency(OpIndex before, OpIndex after) {
  if (after >= size()) {
    throw std::invalid_argument("OpGraph::add_dependency: op " + std::to_string(after) +
                                " does not exist (graph has " + std::to_string(size()) + " ops)");
  }
  // Edges only point forward, which is what keeps every graph acyclic.
  if (before >= after) {
    throw std::invalid_argument("OpGraph::add_dependency: " + std::to_string(before) + " -> " +
                                std::to_string(after) + " does not point to a later op");
  }
  mutable_body("add_dependency").edges.emplace_back(before, after);
}

void OpGraph::reserve(std::size_t ops, std::size_t edges) {
  Body& body = mutable_body("reserve");
  body.ops.reserve(ops);
  body.edges.reserve(edges);
}

void OpGraph::release_spare_room() {
  HugePageAllocator<Op>::release_spare(body_->ops);
  HugePageAllocator<std::pair<OpIndex, OpIndex>>::release_spare(body_->edges);
}

std::size_t OpGraph::edge_count() const {
  return body_->edges.size();
}

OpGraph OpGraph::rebound(const OpBinding& binding) const {
  OpGraph graph;
  graph.body_ = body_;
  graph.static_bytes = static_bytes;
  graph.binding_ = binding_;
  const auto compose = [](auto& mine, const auto& more) {
    for (auto& [from, to] : mine) {
      for (const auto& [more_from, more_to] : more) {
        if (to == more_from) {
          to = more_to;
          break;
        }
      }
    }
    for (const auto& rename : more) {
      const bool known = std::any_of(mine.begin(), mine.end(),
                                     [&](const auto& m) { return m.first == rename.first; });
      if (!known) mine.push_back(rename);
    }
  };
  compose(graph.binding_.groups, binding.groups);
  compose(graph.binding_.peers, binding.peers);
  return graph;
}

std::size_t OpGraph::size() const {
  return body_->ops.size();
}

Op OpGraph::op(OpIndex index) const {
  Op op = body_->ops[index];
  if (op.kind == OpKind::kCollective) {
    for (const auto& [from, to] : binding_.groups) {
      if (op.group == from) {
        op.group = to;
        break;
      }
    }
  } else if (op.kind != OpKind::kCompute) {
    for (const auto& [from, to] : binding_.peers) {
      if (op.peer == from) {
        op.peer = to;
        break;
      }
    }
  }
  return op;
}

const Op& OpGraph::shared_op(OpIndex index) const {
  return body_->ops[index];
}

std::uint32_t OpGraph::comm_position(OpIndex index) const {
  return body_->index().comm_position[index];
}

std::size_t OpGraph::comm_count() const {
  return body_->index().comm_count;
}

void OpGraph::prepare() const {
  body_->index();
}

OpGraph::DependentIndex OpGraph::dependent_index() const {
  const auto& ix = body_->index();
  return {ix.dependent_begin, ix.dependents};
}

std::span<const std::uint32_t> OpGraph::comm_positions() const {
  return body_->index().comm_position;
}

std::span<const Time> OpGraph::host_issued() const {
  return body_->index().host_issued;
}

std::span<const OpIndex> OpGraph::host_syncs() const {
  return body_->index().host_syncs;
}

std::span<const OpIndex> OpGraph::dependency_span(OpIndex index) const {
  const auto& ix = body_->index();
  return {ix.dependencies.data() + ix.dependency_begin[index],
          ix.dependency_begin[index + 1] - ix.dependency_begin[index]};
}

std::span<const OpIndex> OpGraph::dependent_span(OpIndex index) const {
  const auto& ix = body_->index();
  return {ix.dependents.data() + ix.dependent_begin[index],
          ix.dependent_begin[index + 1] - ix.dependent_begin[index]};
}

std::span<const OpIndex> OpGraph::stream_ops(StreamIndex stream) const {
  const auto& ix = body_->index();
  if (stream >= ix.stream_ops.size()) return {};
  return ix.stream_ops[stream];
}

std::vector<OpIndex> OpGraph::dependencies(OpIndex index) const {
  const auto span = dependency_span(index);
  return {span.begin(), span.end()};
}

std::vector<OpIndex> OpGraph::dependents(OpIndex index) const {
  const auto span = dependent_span(index);
  return {span.begin(), span.end()};
}

std::size_t OpGraph::dependency_count(OpIndex index) const {
  return dependency_span(index).size();
}

int OpGraph::stream_count() const {
  return body_->stream_count;
}

std::uint32_t OpGraph::intern_label(std::string_view name) {
  return intern_label(name, name);
}

std::uint32_t OpGraph::intern_label(std::string_view name, std::string_view family) {
  if (const auto found = find_label(name)) return *found;
  const std::optional<std::uint32_t> family_index =
      family == name ? std::nullopt : std::optional(intern_label(family));
  Body& body = mutable_body("intern_label");
  const auto index = static_cast<std::uint32_t>(body.labels.size());
  body.labels.emplace_back(name);
  body.label_index.emplace(std::string_view(body.labels.back()), index);
  body.label_families.push_back(family_index.value_or(index));
  return index;
}

std::optional<std::uint32_t> OpGraph::find_label(std::string_view name) const {
  const auto found = body_->label_index.find(name);
  if (found == body_->label_index.end()) return std::nullopt;
  return found->second;
}

const std::string& OpGraph::label(std::uint32_t index) const {
  return body_->labels[index];
}

std::uint32_t OpGraph::label_family(std::uint32_t index) const {
  return body_->label_families[index];
}

std::size_t OpGraph::label_count() const {
  return body_->labels.size();
}

}  // namespace wallsim
