#include <catch2/catch.hpp>

#include "sim/report/op_category.hpp"
#include "sim/report/time_attribution.hpp"

using namespace wallsim;

namespace {

constexpr StreamIndex kCompute = 0;
constexpr StreamIndex kComm = 1;

Time us(double value) {
  return Time::from_us(value);
}

Op compute_op() {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = kCompute;
  op.category = category_code(OpCategory::kGemm);
  return op;
}

Op comm_op(OpKind kind, OpCategory category) {
  Op op;
  op.kind = kind;
  op.stream = kComm;
  op.category = category_code(category);
  return op;
}

// A rank trace built by hand: records in op order.
struct Fixture {
  OpGraph graph;
  RankTrace trace;
  OpIndex add(Op op, std::initializer_list<OpIndex> deps, double ready, double start, double end) {
    // A compute op is ready when it starts: only communication ops record a ready time.
    REQUIRE((op.kind != OpKind::kCompute || ready == start));
    const OpIndex index = graph.add(op, deps);
    trace.ops.push_back(OpRecord{us(start), us(end)});
    if (op.kind != OpKind::kCompute) trace.comm_ready.push_back(us(ready));
    return index;
  }
};

}  // namespace

TEST_CASE("waiting on a collective is exposed time of its group", "[report][attribution]") {
  Fixture f;
  const OpIndex a = f.add(compute_op(), {}, 0, 0, 10);
  const OpIndex c = f.add(comm_op(OpKind::kCollective, OpCategory::kTp), {a}, 10, 10, 14);
  f.add(compute_op(), {c}, 14, 14, 20);
  const TimeSplit split = attribute_time(f.graph, f.trace, kCompute, us(20), 12e-6);
  // Compute ran 10 + 6 µs; the 4 µs gap ended with the TP collective.
  CHECK(split.compute_s == Approx(16e-6));
  CHECK(split.exposed_comm_s[category_slot(OpCategory::kTp)] == Approx(4e-6));
  CHECK(split.bubble_s == 0);
  CHECK(split.other_s == 0);
  CHECK(split.compute_inefficiency_s == Approx(4e-6));
  CHECK(split.step_s == Approx(20e-6));
}

TEST_CASE("a pipeline receive splits its gap into bubble and pp transfer",
          "[report][attribution]") {
  Fixture f;
  // Posted at 0, the sender was ready at 6 µs, the transfer took 2 µs.
  const OpIndex recv = f.add(comm_op(OpKind::kRecv, OpCategory::kPp), {}, 0, 6, 8);
  f.add(compute_op(), {recv}, 8, 8, 18);
  const TimeSplit split = attribute_time(f.graph, f.trace, kCompute, us(18), 0);
  CHECK(split.bubble_s == Approx(6e-6));
  CHECK(split.exposed_comm_s[category_slot(OpCategory::kPp)] == Approx(2e-6));
  CHECK(split.compute_s == Approx(10e-6));
}

TEST_CASE("time after the last compute op goes to what ended last", "[report][attribution]") {
  Fixture f;
  const OpIndex a = f.add(compute_op(), {}, 0, 0, 20);
  f.add(comm_op(OpKind::kCollective, OpCategory::kDp), {a}, 20, 20, 25);
  const TimeSplit split = attribute_time(f.graph, f.trace, kCompute, us(27), 0);
  // 20 µs compute, 5 µs exposed DP reduction, and 2 µs after this rank finished (another rank
  // ended the step later): other.
  CHECK(split.exposed_comm_s[category_slot(OpCategory::kDp)] == Approx(5e-6));
  CHECK(split.other_s == Approx(2e-6));
  const double sum = split.compute_s + split.exposed_comm_total() + split.bubble_s + split.other_s;
  CHECK(sum == Approx(split.step_s));
}

TEST_CASE("overlapped communication costs nothing", "[report][attribution]") {
  Fixture f;
  const OpIndex a = f.add(compute_op(), {}, 0, 0, 10);
  f.add(comm_op(OpKind::kCollective, OpCategory::kTp), {a}, 10, 10, 15);
  f.add(compute_op(), {a}, 10, 10, 30);  // does not wait for the collective
  const TimeSplit split = attribute_time(f.graph, f.trace, kCompute, us(30), 0);
  CHECK(split.exposed_comm_total() == 0);
  CHECK(split.compute_s == Approx(30e-6));
}
