#include <catch2/catch.hpp>

#include <stdexcept>
#include <vector>

#include "fake_comm.hpp"
#include "sim/graph/op_graph.hpp"

using namespace wallsim;
using wallsim::test::compute;
using wallsim::test::us;

TEST_CASE("ops get consecutive indices and the stream count is the highest stream plus one",
          "[graph][op_graph]") {
  OpGraph graph;
  CHECK(graph.size() == 0);
  CHECK(graph.stream_count() == 0);
  CHECK(graph.add(compute(us(1), 0)) == 0);
  CHECK(graph.add(compute(us(1), 3)) == 1);  // streams 1 and 2 exist but are empty
  CHECK(graph.add(compute(us(1), 1)) == 2);
  CHECK(graph.size() == 3);
  CHECK(graph.stream_count() == 4);
  CHECK(graph.op(1).stream == 3);
}

TEST_CASE("dependencies and dependents list both ends of every edge in insertion order",
          "[graph][op_graph]") {
  OpGraph graph;
  const OpIndex a = graph.add(compute(us(1)));
  const OpIndex b = graph.add(compute(us(1), 1));
  const OpIndex c = graph.add(compute(us(1)), {b, a});
  const OpIndex d = graph.add(compute(us(1), 1));
  graph.add_dependency(a, d);
  CHECK(graph.dependencies(c) == std::vector<OpIndex>{b, a});
  CHECK(graph.dependencies(d) == std::vector<OpIndex>{a});
  CHECK(graph.dependency_count(c) == 2);
  CHECK(graph.dependents(a) == std::vector<OpIndex>{c, d});
  CHECK(graph.dependents(b) == std::vector<OpIndex>{c});
  CHECK(graph.dependents(d).empty());
}

TEST_CASE("a dependency must point from an earlier op to a later one", "[graph][op_graph]") {
  OpGraph graph;
  const OpIndex a = graph.add(compute(us(1)));
  const OpIndex b = graph.add(compute(us(1)));
  CHECK_THROWS_AS(graph.add(compute(us(1)), {5}), std::invalid_argument);
  CHECK(graph.size() == 2);  // the rejected op was not added
  CHECK_THROWS_AS(graph.add_dependency(b, a), std::invalid_argument);
  CHECK_THROWS_AS(graph.add_dependency(a, a), std::invalid_argument);
  CHECK_THROWS_AS(graph.add_dependency(a, 7), std::invalid_argument);
  CHECK(graph.dependencies(b).empty());
}

TEST_CASE("the same label string interns to the same index", "[graph][op_graph]") {
  OpGraph graph;
  const auto fc1 = graph.intern_label("fc1");
  const auto fc2 = graph.intern_label("fc2");
  CHECK(fc1 != fc2);
  CHECK(graph.intern_label("fc1") == fc1);
  CHECK(graph.label(fc2) == "fc2");
  CHECK(graph.label_count() == 2);
}

TEST_CASE("a label keeps the kernel family it was first interned with", "[graph][op_graph]") {
  OpGraph graph;
  const auto l0 = graph.intern_label("L0 fc1 fwd", "fc1 fwd");
  const auto l1 = graph.intern_label("L1 fc1 fwd", "fc1 fwd");
  // Both layers' labels share one family, itself an interned name that is its own family.
  CHECK(graph.label_family(l0) == graph.label_family(l1));
  CHECK(graph.label(graph.label_family(l0)) == "fc1 fwd");
  CHECK(graph.label_family(graph.label_family(l0)) == graph.label_family(l0));
  // Interned again, with another family or none, a label keeps its first.
  CHECK(graph.intern_label("L0 fc1 fwd", "other") == l0);
  CHECK(graph.intern_label("L0 fc1 fwd") == l0);
  CHECK(graph.label(graph.label_family(l0)) == "fc1 fwd");
  CHECK(graph.find_label("L1 fc1 fwd") == l1);
  CHECK_FALSE(graph.find_label("L2 fc1 fwd").has_value());
  // Without a family a label is its own.
  const auto plain = graph.intern_label("step");
  CHECK(graph.label_family(plain) == plain);
}

TEST_CASE("a moved graph keeps its ops, edges and labels", "[graph][op_graph]") {
  OpGraph graph;
  graph.intern_label("x");
  const OpIndex a = graph.add(compute(us(1)));
  graph.add(compute(us(2)), {a});
  OpGraph moved = std::move(graph);
  CHECK(moved.size() == 2);
  CHECK(moved.dependents(a) == std::vector<OpIndex>{1});
  CHECK(moved.label(0) == "x");
}

TEST_CASE("a rebound graph shares ops and edges and renames groups and peers",
          "[graph][op_graph]") {
  OpGraph graph;
  graph.static_bytes = 5;
  const OpIndex a = graph.add(compute(us(1)));
  Op collective;
  collective.kind = OpKind::kCollective;
  collective.group = 3;
  const OpIndex b = graph.add(collective, {a});
  Op send;
  send.kind = OpKind::kSend;
  send.peer = 7;
  graph.add(send, {b});
  const OpGraph other = graph.rebound({{{3, 4}}, {{7, 9}}});
  CHECK(other.shares_body_with(graph));
  CHECK(other.static_bytes == 5);
  CHECK(other.size() == 3);
  CHECK(other.op(b).group == 4);
  CHECK(other.op(2).peer == 9);
  CHECK(graph.op(b).group == 3);  // the original keeps its names
  CHECK(other.dependents(a) == std::vector<OpIndex>{b});
  // Renames compose: 3 -> 4 -> 6.
  CHECK(other.rebound({{{4, 6}}, {}}).op(b).group == 6);
  // A shared body is frozen.
  CHECK_THROWS_AS(graph.add(compute(us(1))), std::logic_error);
}

TEST_CASE("dependency and dependent lists keep the order edges were added in",
          "[graph][op_graph]") {
  OpGraph graph;
  const OpIndex a = graph.add(compute(us(1)));
  const OpIndex b = graph.add(compute(us(1)));
  const OpIndex c = graph.add(compute(us(1)), {b, a});
  const OpIndex d = graph.add(compute(us(1)), {a});
  graph.add_dependency(b, d);
  CHECK(graph.dependencies(c) == std::vector<OpIndex>{b, a});
  CHECK(graph.dependencies(d) == std::vector<OpIndex>{a, b});
  CHECK(graph.dependents(a) == std::vector<OpIndex>{c, d});
  CHECK(graph.stream_ops(0).size() == 4);
}

TEST_CASE("reserving room, and giving back what was not filled, changes nothing a graph holds",
          "[graph][op_graph]") {
  // The same ops and edges added to a graph with room reserved (40,000 ops of 96 bytes: on huge
  // pages of its own) and to one without; the reserved one gives back its unfilled room halfway
  // and goes on growing into it.
  OpGraph reserved, grown;
  reserved.reserve(40000, 80000);
  for (OpGraph* graph : {&reserved, &grown}) {
    OpIndex previous = graph->add(compute(us(1)));
    for (int i = 1; i < 3000; ++i) {
      if (i == 1500) graph->release_spare_room();
      const OpIndex next = graph->add(compute(us(i), i % 3), {previous});
      if (i % 7 == 0) graph->add_dependency(previous / 2, next);
      previous = next;
    }
  }
  REQUIRE(reserved.size() == grown.size());
  CHECK(reserved.size() == 3000);
  CHECK(reserved.edge_count() == grown.edge_count());
  CHECK(reserved.stream_count() == grown.stream_count());
  for (OpIndex i = 0; i < reserved.size(); i += 97) {
    CHECK(reserved.op(i).duration == grown.op(i).duration);
    CHECK(reserved.op(i).stream == grown.op(i).stream);
    CHECK(reserved.dependencies(i) == grown.dependencies(i));
    CHECK(reserved.dependents(i) == grown.dependents(i));
  }
}
