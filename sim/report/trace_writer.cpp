#include "sim/report/trace_writer.hpp"

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
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

// The same texts appended to a line that is reused from event to event: a trace of millions of
// ops would spend most of its writing time building short strings. std::to_chars writes what printf
// writes for these formats ("%.6g" is its general format at precision 6).
void append_int(std::string& line, std::int64_t value) {
  char buffer[24];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  line.append(buffer, end);
}

void append_micros(std::string& line, std::int64_t ns) {
  if (ns < 0) {
    line += micros(ns);
    return;
  }
  append_int(line, ns / 1000);
  const auto fraction = static_cast<int>(ns % 1000);
  const char digits[4] = {'.', char('0' + fraction / 100), char('0' + fraction / 10 % 10),
                          char('0' + fraction % 10)};
  line.append(digits, sizeof digits);
}

void append_number(std::string& line, double value) {
  char buffer[32];
  const auto end =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, 6).ptr;
  line.append(buffer, end);
}

class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  void add(std::string_view event) {
    if (stats_.events == 0)
      out_.put('\n');
    else
      out_.write(",\n", 2);
    out_.write(event.data(), static_cast<std::streamsize>(event.size()));
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

void append_op_args(std::string& line, const TraceInput& input, const TraceRank& rank,
                    OpIndex index) {
  const Op& op = rank.graph->op(index);
  const OpRecord& record = rank.trace->ops[index];
  line += "\"op\":";
  append_int(line, index);
  if (op.microbatch) {
    line += ",\"mb\":";
    append_int(line, *op.microbatch);
  }
  if (op.layer) {
    line += ",\"layer\":";
    append_int(line, *op.layer);
  }
  if (op.flops > 0) {
    line += ",\"flops\":";
    append_number(line, op.flops);
  }
  const Time ready = rank.trace->ready(*rank.graph, index);
  if (record.start > ready) {
    line += ",\"wait_us\":";
    append_micros(line, to_ns(record.start - ready));
  }
  if (op.kind == OpKind::kCompute || !input.comm_detail) return;
  const CommDetail detail = input.comm_detail(rank, op);
  line += ",\"collective\":";
  append_json_quoted(line, detail.op);
  line += ",\"bytes\":";
  append_number(line, detail.bytes);
  line += ",\"ranks\":";
  append_int(line, detail.ranks);
  line += detail.crosses_domains ? ",\"tier\":\"network\"" : ",\"tier\":\"nvlink\"";
  if (op.kind == OpKind::kCollective) {
    line += ",\"group\":";
    append_int(line, op.group);
  }
}

std::string category_of(const Op& op) {
  return op.category < kOpCategoryCount ? category_name(static_cast<OpCategory>(op.category))
                                        : "op";
}

// Ops of a rank in the order the trace lists them: by stream, then start, then index.
std::vector<OpIndex> ordered_ops(const TraceRank& rank) {
  std::vector<std::tuple<StreamIndex, Time, OpIndex>> keys(rank.graph->size());
  for (OpIndex i = 0; i < keys.size(); ++i) {
    keys[i] = {rank.graph->shared_op(i).stream, rank.trace->ops[i].start, i};
  }
  std::sort(keys.begin(), keys.end());
  std::vector<OpIndex> order(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) order[k] = std::get<2>(keys[k]);
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
  std::string line;
  for (OpIndex i : ordered_ops(rank)) {
    const Op& op = rank.graph->op(i);
    const OpRecord& record = rank.trace->ops[i];
    const std::int64_t start = to_ns(record.start);
    line.assign("{\"name\":");
    append_json_quoted(line, rank.graph->label(op.label));
    line += ",\"cat\":\"";
    line += category_of(op);
    line += "\",\"ph\":\"X\",\"ts\":";
    append_micros(line, start);
    line += ",\"dur\":";
    append_micros(line, to_ns(record.end) - start);
    line += ",\"pid\":";
    append_int(line, rank.id);
    line += ",\"tid\":";
    append_int(line, op.stream);
    line += ",\"args\":{";
    append_op_args(line, input, rank, i);
    line += "}}";
    events.add(line);
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
    const OpKind kind = rank.graph->shared_op(i).kind;
    if (kind == OpKind::kCompute || kind == OpKind::kRecv) continue;
    const Op& op = rank.graph->op(i);
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
      if (rank.graph->shared_op(i).kind != OpKind::kCompute) comm.push_back(i);
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
  std::string line;
  for (auto& [key, ends] : match_communication(input)) {
    if (ends.size() < 2) continue;
    ++id;
    const char* cat = std::get<0>(key) == 0 ? "collective" : "transfer";
    for (std::size_t e = 0; e < ends.size(); ++e) {
      const char* phase = e == 0 ? "s" : (e + 1 == ends.size() ? "f" : "t");
      const TraceRank& rank = *ends[e].rank;
      const Op& op = rank.graph->op(ends[e].op);
      line.assign("{\"name\":");
      append_json_quoted(line, rank.graph->label(op.label));
      line += ",\"cat\":\"";
      line += cat;
      line += "\",\"ph\":\"";
      line += phase;
      line += "\",\"bp\":\"e\",\"id\":";
      append_int(line, static_cast<std::int64_t>(id));
      line += ",\"ts\":";
      append_micros(line, to_ns(rank.trace->ops[ends[e].op].start));
      line += ",\"pid\":";
      append_int(line, rank.id);
      line += ",\"tid\":";
      append_int(line, op.stream);
      line += "}";
      events.add(line);
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
