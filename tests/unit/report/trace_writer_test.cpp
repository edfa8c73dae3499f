// trace.json: well-formed Chrome trace events from a replayed step.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include <nlohmann/json.hpp>

#include "sim/core/engine.hpp"
#include "sim/graph/replay.hpp"
#include "sim/report/op_category.hpp"
#include "sim/report/trace_writer.hpp"

using namespace wallsim;
using nlohmann::json;

namespace {

// Every collective takes 3 µs, every transfer 2 µs.
class FixedDelayComm final : public CommService {
 public:
  explicit FixedDelayComm(Engine& engine) : engine_(engine) {}
  void start_collective(GroupIndex, std::uint32_t, Done done) override {
    engine_.schedule_after(Time::from_us(3), std::move(done));
  }
  void start_transfer(RankIndex, RankIndex, std::uint32_t, Done done) override {
    engine_.schedule_after(Time::from_us(2), std::move(done));
  }

 private:
  Engine& engine_;
};

Op compute(OpGraph& graph, const char* name, double us, double alloc = 0, double free = 0) {
  Op op;
  op.label = graph.intern_label(name);
  op.category = category_code(OpCategory::kGemm);
  op.duration = op.duration_contended = Time::from_us(us);
  op.alloc_bytes = alloc;
  op.free_bytes = free;
  op.microbatch = 0;
  op.flops = 1e9;
  return op;
}

Op comm(OpGraph& graph, OpKind kind, OpCategory category, StreamIndex stream) {
  Op op;
  op.kind = kind;
  op.label = graph.intern_label(kind == OpKind::kCollective ? "all-reduce" : "transfer");
  op.category = category_code(category);
  op.stream = stream;
  return op;
}

// Three ranks: compute, two all-reduces on group 0 (all ranks), then rank 0 sends to rank 1.
struct Step {
  std::vector<OpGraph> graphs;
  std::vector<std::vector<RankIndex>> groups{{0, 1, 2}};
  ReplayResult replay;

  Step() {
    for (int r = 0; r < 3; ++r) {
      OpGraph& g = graphs.emplace_back();
      const OpIndex a = g.add(compute(g, "fc1 fwd", 10.0 + r, 1e9));
      const OpIndex c1 = g.add(comm(g, OpKind::kCollective, OpCategory::kTp, 1), {a});
      const OpIndex b = g.add(compute(g, "fc2 fwd", 5, 0, 1e9), {c1});
      const OpIndex c2 = g.add(comm(g, OpKind::kCollective, OpCategory::kDp, 2), {b});
      Op transfer = comm(g, r == 0 ? OpKind::kSend : OpKind::kRecv, OpCategory::kPp, 3);
      transfer.peer = r == 0 ? 1 : 0;
      if (r < 2) g.add(transfer, {c2});
    }
    Engine engine;
    FixedDelayComm service(engine);
    Replay replay_run(engine, graphs, groups, service);
    replay = replay_run.run();
  }

  TraceInput input() const {
    TraceInput in;
    in.stream_names = {"compute", "tp", "dp", "pp"};
    in.step_s = replay.end.seconds();
    for (int r = 0; r < 3; ++r) {
      in.ranks.push_back(
          TraceRank{"pp0 tp" + std::to_string(r), 10 + r, 0, r, &graphs[r], &replay.ranks[r]});
    }
    in.comm_detail = [](const TraceRank&, const Op& op) {
      return CommDetail{op.kind == OpKind::kCollective ? "all_reduce" : "send_recv", 3e6, 4e6,
                        op.kind == OpKind::kCollective ? 3 : 2, op.kind != OpKind::kCollective};
    };
    return in;
  }
};

std::tuple<int, int, double> slice_key(const json& e) {
  return {e["pid"].get<int>(), e["tid"].get<int>(), e["ts"].get<double>()};
}

json write(const TraceInput& input, TraceStats* stats = nullptr) {
  std::ostringstream out;
  const TraceStats written = write_chrome_trace(input, out);
  if (stats) *stats = written;
  return json::parse(out.str());  // throws (fails the test) when not valid JSON
}

}  // namespace

TEST_CASE("trace.json is valid JSON with one process per rank and one thread per stream",
          "[report][trace]") {
  const Step step;
  TraceStats stats;
  const json trace = write(step.input(), &stats);
  REQUIRE(trace["traceEvents"].is_array());
  CHECK(stats.events == trace["traceEvents"].size());
  std::map<int, std::string> processes;
  std::set<std::pair<int, int>> threads;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    CHECK(std::string("XMCstf").find(ph) != std::string::npos);
    if (ph == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (ph == "M" && e["name"] == "thread_name")
      threads.insert({e["pid"].get<int>(), e["tid"].get<int>()});
  }
  CHECK(processes == std::map<int, std::string>{{10, "pp0 tp0"}, {11, "pp0 tp1"}, {12, "pp0 tp2"}});
  CHECK(threads.count({10, 3}) == 1);
  // 4 ops on ranks 0 and 1 plus the transfer, 4 on rank 2.
  CHECK(stats.slices == 5 + 5 + 4);
}

TEST_CASE("slices of one thread are complete events in time order that never overlap",
          "[report][trace]") {
  const json trace = write(Step().input());
  std::map<std::pair<int, int>, double> thread_end;
  std::map<std::pair<int, std::string>, double> counter_at;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      const auto key = std::make_pair(e["pid"].get<int>(), e["tid"].get<int>());
      const double ts = e["ts"], dur = e["dur"];
      CHECK(dur >= 0);
      if (thread_end.count(key)) CHECK(ts >= thread_end[key]);
      thread_end[key] = ts + dur;
      CHECK(e["args"].contains("op"));
    } else if (e["ph"] == "C") {
      const auto key = std::make_pair(e["pid"].get<int>(), e["name"].get<std::string>());
      if (counter_at.count(key)) CHECK(e["ts"].get<double>() > counter_at[key]);
      counter_at[key] = e["ts"];
    }
  }
  CHECK(counter_at.count({10, "memory in use"}) == 1);
  CHECK(counter_at.count({10, "link GB/s"}) == 1);
}

TEST_CASE("every collective links all its traced ranks, a transfer links both sides",
          "[report][trace]") {
  TraceStats stats;
  const json trace = write(Step().input(), &stats);
  // Slices of communication ops, by (pid, tid, ts).
  std::set<std::tuple<int, int, double>> comm_slices;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["args"].contains("collective")) {
      comm_slices.insert(slice_key(e));
    }
  }
  std::map<int, std::vector<json>> flows;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "s" || e["ph"] == "t" || e["ph"] == "f") flows[e["id"]].push_back(e);
  }
  // Two all-reduces over 3 ranks and one transfer.
  CHECK(stats.flows == 3);
  REQUIRE(flows.size() == 3);
  std::multiset<std::size_t> sizes;
  std::size_t linked = 0;
  for (const auto& [id, events] : flows) {
    sizes.insert(events.size());
    CHECK(events.front()["ph"] == "s");
    CHECK(events.back()["ph"] == "f");
    std::set<int> pids;
    for (const auto& e : events) {
      pids.insert(e["pid"].get<int>());
      // Each flow end sits on a communication slice of that rank.
      CHECK(comm_slices.count(slice_key(e)) == 1);
      ++linked;
    }
    CHECK(pids.size() == events.size());
  }
  CHECK(sizes == std::multiset<std::size_t>{2, 3, 3});
  CHECK(linked == comm_slices.size());  // every communication slice is linked
}

TEST_CASE("a rank traced alone has no flows, and the output repeats byte for byte",
          "[report][trace]") {
  const Step step;
  TraceInput one = step.input();
  one.ranks.resize(1);
  TraceStats stats;
  write(one, &stats);
  CHECK(stats.flows == 0);
  std::ostringstream a, b;
  write_chrome_trace(step.input(), a);
  write_chrome_trace(step.input(), b);
  CHECK(a.str() == b.str());
}
