#include "sim/report/time_attribution.hpp"

#include <algorithm>

#include "sim/report/op_category.hpp"

namespace wallsim {
namespace {

struct Gap {
  Time from;
  Time to;
};

OpCategory category_of(const Op& op) {
  return static_cast<OpCategory>(op.category);
}

// Charges the gap to the op `cause` that ended at gap.to.
void charge(TimeSplit& split, const Op& cause, const OpRecord& record, Gap gap) {
  const double total = (gap.to - gap.from).seconds();
  if (total <= 0) return;
  const OpCategory category = category_of(cause);
  if (!is_communication(category)) {
    split.other_s += total;
    return;
  }
  const Time transfer_from = max(gap.from, min(record.start, gap.to));
  const double transfer = (gap.to - transfer_from).seconds();
  const double waiting = total - transfer;
  double& exposed = split.exposed_comm_s[static_cast<std::size_t>(category_slot(category))];
  if (cause.kind == OpKind::kRecv) {
    split.bubble_s += waiting;
    exposed += transfer;
  } else {
    exposed += total;
  }
}

// The dependency of `index` that ended last, if it ended after `after`.
std::optional<OpIndex> binding_dependency(const OpGraph& graph, const RankTrace& trace,
                                          OpIndex index, Time after) {
  std::optional<OpIndex> binding;
  Time latest = after;
  for (OpIndex dependency : graph.dependencies(index)) {
    if (trace.ops[dependency].end > latest) {
      latest = trace.ops[dependency].end;
      binding = dependency;
    }
  }
  return binding;
}

OpIndex last_ending_op(const RankTrace& trace) {
  OpIndex last = 0;
  for (OpIndex i = 1; i < trace.ops.size(); ++i) {
    if (trace.ops[i].end >= trace.ops[last].end) last = i;
  }
  return last;
}

}  // namespace

double TimeSplit::exposed_comm_total() const {
  double total = 0;
  for (double value : exposed_comm_s) total += value;
  return total;
}

void for_each_compute_op(const OpGraph& graph, const RankTrace& trace, StreamIndex compute_stream,
                         const std::function<void(const ComputeOpWait&)>& visit) {
  Time cursor = Time::zero();
  Time stream_free = Time::zero();  // end of the previous op of any kind on the stream
  for (const OpIndex i : graph.stream_ops(compute_stream)) {
    const OpRecord& record = trace.ops[i];
    const Time previous_end = stream_free;
    stream_free = record.end;
    if (graph.shared_op(i).kind != OpKind::kCompute) continue;
    Time issued_from = record.start;
    if (record.start > cursor) {
      // What the op waited for besides the host; the rest of the gap it waited to be issued.
      Time unblocked = previous_end;
      for (const OpIndex dependency : graph.dependency_span(i)) {
        unblocked = max(unblocked, trace.ops[dependency].end);
      }
      issued_from = max(cursor, min(unblocked, record.start));
    }
    visit(ComputeOpWait{i, cursor, issued_from});
    cursor = max(cursor, record.end);
  }
}

TimeSplit attribute_time(const OpGraph& graph, const RankTrace& trace, StreamIndex compute_stream,
                         Time step_end, double ideal_s) {
  TimeSplit split;
  split.step_s = step_end.seconds();
  split.ideal_s = ideal_s;
  Time cursor = Time::zero();
  for_each_compute_op(graph, trace, compute_stream, [&](const ComputeOpWait& wait) {
    const OpRecord& record = trace.ops[wait.op];
    if (record.start > wait.idle_from) {
      split.host_s += (record.start - wait.issued_from).seconds();
      const auto cause = binding_dependency(graph, trace, wait.op, wait.idle_from);
      if (cause) {
        charge(split, graph.op(*cause), trace.ops[*cause], Gap{wait.idle_from, wait.issued_from});
      } else {
        split.other_s += (wait.issued_from - wait.idle_from).seconds();
      }
    }
    split.compute_s += (record.end - record.start).seconds();
    cursor = max(cursor, record.end);
  });
  if (step_end > cursor && !trace.ops.empty()) {
    const OpIndex last = last_ending_op(trace);
    const Time last_end = min(trace.ops[last].end, step_end);
    if (last_end > cursor) charge(split, graph.op(last), trace.ops[last], Gap{cursor, last_end});
    split.other_s += (step_end - max(cursor, last_end)).seconds();
  }
  split.compute_inefficiency_s = split.compute_s - split.ideal_s;
  return split;
}

std::array<double, kOpCategoryCount> compute_time_by_category(const OpGraph& graph,
                                                              const RankTrace& trace,
                                                              StreamIndex compute_stream) {
  std::array<double, kOpCategoryCount> seconds{};
  for (OpIndex i = 0; i < graph.size(); ++i) {
    const Op& op = graph.shared_op(i);
    if (op.stream != compute_stream || op.kind != OpKind::kCompute) continue;
    seconds[std::min<int>(op.category, kOpCategoryCount - 1)] +=
        (trace.ops[i].end - trace.ops[i].start).seconds();
  }
  return seconds;
}

}  // namespace wallsim
