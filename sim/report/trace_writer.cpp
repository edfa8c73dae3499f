#include "sim/report/trace_writer.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/report/json_text.hpp"
#include "sim/report/op_category.hpp"

namespace wallsim {
namespace {

// Picoseconds -> "microseconds.nanoseconds", rounded to the nanosecond.
std::int64_t to_ns(Time t) {
  return (t.ps() + 500) / 1000;
}

std::string micros(std::int64_t ns) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%" PRId64 ".%03" PRId64, ns / 1000, ns % 1000);
  return buffer;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  return buffer;
}

class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  void add(const std::string& event) {
    out_ << (stats_.events == 0 ? "\n" : ",\n") << event;
    ++stats_.events;
  }
  TraceStats& stats() { return stats_; }

 private:
  std::ostream& out_;
  TraceStats stats_;
};

std::string metadata(const char* name, int pid, int tid, const std::string& args) {
  return "{\"name\":\"" + std::string(name) + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{" + args + "}}";
}

std::string op_args(const TraceInput& input, const TraceRank& rank, OpIndex index) {
  const Op& op = rank.graph->op(index);
  const OpRecord& record = rank.trace->ops[index];
  std::string args = "\"op\":" + std::to_string(index);
  if (op.microbatch) args += ",\"mb\":" + std::to_string(*op.microbatch);
  if (op.layer) args += ",\"layer\":" + std::to_string(*op.layer);
  if (op.flops > 0) args += ",\"flops\":" + number(op.flops);
  const Time ready = rank.trace->ready(*rank.graph, index);
  if (record.start > ready) args += ",\"wait_us\":" + micros(to_ns(record.start - ready));
  if (op.kind == OpKind::kCompute || !input.comm_detail) return args;
  const CommDetail detail = input.comm_detail(rank, op);
  args += ",\"collective\":" + json_quote(detail.op) + ",\"bytes\":" + number(detail.bytes) +
          ",\"ranks\":" + std::to_string(detail.ranks) + ",\"tier\":\"" +
          (detail.crosses_domains ? "network" : "nvlink") + "\"";
  if (op.kind == OpKind::kCollective) args += ",\"group\":" + std::to_string(op.group);
  return args;
}

std::string category_of(const Op& op) {
  return op.category < kOpCategoryCount ? category_name(static_cast<OpCategory>(op.category))
                                        : "op";
}

// Ops of a rank in the order the trace lists them: by stream, then start, then index.
std::vector<OpIndex> ordered_ops(const TraceRank& rank) {
  std::vector<OpIndex> order(rank.graph->size());
  for (OpIndex i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](OpIndex a, OpIndex b) {
    const auto key = [&](OpIndex i) {
      return std::make_tuple(rank.graph->op(i).stream, rank.trace->ops[i].start, i);
    };
    return key(a) < key(b);
  });
  return order;
}

void write_rank_slices(const TraceInput& input, const TraceRank& rank, EventStream& events) {
  events.add(metadata("process_name", rank.id, 0, "\"name\":" + json_quote(rank.name)));
  events.add(
      metadata("process_sort_index", rank.id, 0, "\"sort_index\":" + std::to_string(rank.id)));
  for (int s = 0; s < rank.graph->stream_count(); ++s) {
    const auto stream = static_cast<StreamIndex>(s);
    events.add(
        metadata("thread_name", rank.id, s, "\"name\":" + json_quote(input.stream_name(stream))));
    events.add(metadata("thread_sort_index", rank.id, s, "\"sort_index\":" + std::to_string(s)));
  }
  for (OpIndex i : ordered_ops(rank)) {
    const Op& op = rank.graph->op(i);
    const OpRecord& record = rank.trace->ops[i];
    const std::int64_t start = to_ns(record.start);
    events.add("{\"name\":" + json_quote(rank.graph->label(op.label)) + ",\"cat\":\"" +
               category_of(op) + "\",\"ph\":\"X\",\"ts\":" + micros(start) +
               ",\"dur\":" + micros(to_ns(record.end) - start) +
               ",\"pid\":" + std::to_string(rank.id) + ",\"tid\":" + std::to_string(op.stream) +
               ",\"args\":{" + op_args(input, rank, i) + "}}");
    ++events.stats().slices;
  }
}

std::string counter(const char* name, int pid, std::int64_t ns, const std::string& args) {
  return "{\"name\":\"" + std::string(name) + "\",\"ph\":\"C\",\"ts\":" + micros(ns) +
         ",\"pid\":" + std::to_string(pid) + ",\"args\":{" + args + "}}";
}

void write_memory_counter(const TraceRank& rank, EventStream& events) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  std::int64_t last_ns = -1;
  std::string pending;
  for (const MemorySample& sample : rank.trace->memory) {
    const std::int64_t ns = to_ns(sample.at);
    // Several changes at one instant: only the last value is shown.
    if (ns != last_ns && !pending.empty()) events.add(pending);
    pending = counter("memory in use", rank.id, ns, "\"GiB\":" + number(sample.bytes / kGiB));
    last_ns = ns;
  }
  if (!pending.empty()) events.add(pending);
}

// Bandwidth each communication op sends at, spread evenly over its duration.
void write_link_counter(const TraceInput& input, const TraceRank& rank, EventStream& events) {
  if (!input.comm_detail) return;
  struct Change {
    std::int64_t ns;
    double nvlink, network;  // GB/s
  };
  std::vector<Change> changes;
  for (OpIndex i = 0; i < rank.graph->size(); ++i) {
    const Op& op = rank.graph->op(i);
    if (op.kind == OpKind::kCompute || op.kind == OpKind::kRecv) continue;
    const OpRecord& record = rank.trace->ops[i];
    const std::int64_t from = to_ns(record.start), to = to_ns(record.end);
    if (to <= from) continue;
    const CommDetail detail = input.comm_detail(rank, op);
    const double rate = detail.wire_bytes / (double(to - from) * 1e-9) / 1e9;
    const double nvlink = detail.crosses_domains ? 0 : rate,
                 network = detail.crosses_domains ? rate : 0;
    changes.push_back({from, nvlink, network});
    changes.push_back({to, -nvlink, -network});
  }
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.ns < b.ns; });
  double nvlink = 0, network = 0;
  for (std::size_t i = 0; i < changes.size(); ++i) {
    nvlink += changes[i].nvlink;
    network += changes[i].network;
    if (i + 1 < changes.size() && changes[i + 1].ns == changes[i].ns) continue;
    events.add(counter("link GB/s", rank.id, changes[i].ns,
                       "\"nvlink\":" + number(std::max(0.0, nvlink)) +
                           ",\"network\":" + number(std::max(0.0, network))));
  }
}

// A communication instance: (kind, a, b, c, k) -> its traced members' slices.
using FlowKey = std::tuple<int, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;
struct FlowEnd {
  const TraceRank* rank;
  OpIndex op;
};

std::map<FlowKey, std::vector<FlowEnd>> match_communication(const TraceInput& input) {
  std::map<FlowKey, std::vector<FlowEnd>> instances;
  for (const TraceRank& rank : input.ranks) {
    std::vector<OpIndex> comm;
    for (OpIndex i = 0; i < rank.graph->size(); ++i) {
      if (rank.graph->op(i).kind != OpKind::kCompute) comm.push_back(i);
    }
    std::stable_sort(comm.begin(), comm.end(), [&](OpIndex a, OpIndex b) {
      return rank.trace->ops[a].start < rank.trace->ops[b].start;
    });
    std::map<std::tuple<int, std::int64_t, std::int64_t, std::int64_t>, std::int64_t> seen;
    for (OpIndex i : comm) {
      const Op& op = rank.graph->op(i);
      const bool send = op.kind == OpKind::kSend;
      const auto base =
          op.kind == OpKind::kCollective
              ? std::make_tuple(0, std::int64_t(op.group), std::int64_t(0), std::int64_t(0))
              : std::make_tuple(1, std::int64_t(send ? rank.simulated : op.peer),
                                std::int64_t(send ? op.peer : rank.simulated),
                                std::int64_t(op.tag));
      const std::int64_t k = seen[base]++;
      const auto& [kind, a, b, c] = base;
      instances[FlowKey{kind, a, b, c, k}].push_back(FlowEnd{&rank, i});
    }
  }
  return instances;
}

void write_flows(const TraceInput& input, EventStream& events) {
  std::uint64_t id = 0;
  for (auto& [key, ends] : match_communication(input)) {
    if (ends.size() < 2) continue;
    ++id;
    const char* cat = std::get<0>(key) == 0 ? "collective" : "transfer";
    for (std::size_t e = 0; e < ends.size(); ++e) {
      const char* phase = e == 0 ? "s" : (e + 1 == ends.size() ? "f" : "t");
      const TraceRank& rank = *ends[e].rank;
      const Op& op = rank.graph->op(ends[e].op);
      events.add("{\"name\":" + json_quote(rank.graph->label(op.label)) + ",\"cat\":\"" + cat +
                 "\",\"ph\":\"" + phase + "\",\"bp\":\"e\",\"id\":" + std::to_string(id) +
                 ",\"ts\":" + micros(to_ns(rank.trace->ops[ends[e].op].start)) + ",\"pid\":" +
                 std::to_string(rank.id) + ",\"tid\":" + std::to_string(op.stream) + "}");
    }
    ++events.stats().flows;
  }
}

}  // namespace

TraceStats write_chrome_trace(const TraceInput& input, std::ostream& out) {
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"wallsim\",\"step_s\":"
      << number(input.step_s) << ",\"ranks\":" << input.ranks.size() << "},\"traceEvents\":[";
  EventStream events(out);
  for (const TraceRank& rank : input.ranks) {
    write_rank_slices(input, rank, events);
    write_memory_counter(rank, events);
    write_link_counter(input, rank, events);
  }
  write_flows(input, events);
  out << "\n]}\n";
  return events.stats();
}

}  // namespace wallsim
