#include "sim/report/timeline.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "sim/report/json_text.hpp"
#include "sim/report/op_category.hpp"

namespace wallsim {
namespace {

// printf's "%.*f" (std::to_chars writes the same digits, faster; a text too long for the
// buffer is cut as snprintf cuts it).
std::string fixed(double value, int decimals) {
  char buffer[40];
  const auto [end, error] =
      std::to_chars(buffer, buffer + sizeof buffer - 1, value, std::chars_format::fixed, decimals);
  if (error == std::errc()) return std::string(buffer, end);
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

// Time in microseconds, nanosecond resolution (as in trace.json).
std::string micros(Time t) {
  return fixed(double((t.ps() + 500) / 1000) / 1000.0, 3);
}

std::vector<MemorySample> thinned(const std::vector<MemorySample>& samples, Time end) {
  if (samples.size() <= static_cast<std::size_t>(kTimelineMemoryPoints)) return samples;
  const int buckets = kTimelineMemoryPoints / 2;
  const double width = std::max<double>(1.0, double(end.ps()) / buckets);
  std::vector<MemorySample> kept;
  std::size_t i = 0;
  while (i < samples.size()) {
    const auto bucket = static_cast<std::int64_t>(double(samples[i].at.ps()) / width);
    std::size_t low = i, high = i, j = i;
    for (; j < samples.size() &&
           static_cast<std::int64_t>(double(samples[j].at.ps()) / width) == bucket;
         ++j) {
      if (samples[j].bytes < samples[low].bytes) low = j;
      if (samples[j].bytes > samples[high].bytes) high = j;
    }
    kept.push_back(samples[std::min(low, high)]);
    if (low != high) kept.push_back(samples[std::max(low, high)]);
    i = j;
  }
  return kept;
}

void write_rank(const TraceRank& rank, Time end, std::ostream& out) {
  std::map<std::uint32_t, std::size_t> label_slot;
  std::vector<std::uint32_t> labels;
  out << "{\"name\":" << json_quote(rank.name) << ",\"rank\":" << rank.id
      << ",\"stage\":" << rank.stage << ",\"ops\":[";
  for (OpIndex i = 0; i < rank.graph->size(); ++i) {
    const Op& op = rank.graph->shared_op(i);  // stream, category and label: not rebound
    const OpRecord& record = rank.trace->ops[i];
    auto [slot, added] = label_slot.try_emplace(op.label, labels.size());
    if (added) labels.push_back(op.label);
    out << (i ? "," : "") << int(op.stream) << ',' << op.category << ',' << micros(record.start)
        << ',' << micros(record.end - record.start) << ',' << slot->second;
  }
  out << "],\"labels\":[";
  for (std::size_t l = 0; l < labels.size(); ++l) {
    out << (l ? "," : "") << json_quote(rank.graph->label(labels[l]));
  }
  out << "],\"memory\":[";
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  bool first = true;
  for (const MemorySample& sample : thinned(rank.trace->memory, end)) {
    out << (first ? "" : ",") << micros(sample.at) << ',' << fixed(sample.bytes / kGiB, 4);
    first = false;
  }
  out << "]}";
}

}  // namespace

void write_timeline_json(const TraceInput& input, std::ostream& out) {
  out << "{\"version\":1,\"step_s\":" << fixed(input.step_s, 9) << ",\"streams\":[";
  int streams = 0;
  for (const TraceRank& rank : input.ranks) streams = std::max(streams, rank.graph->stream_count());
  for (int s = 0; s < streams; ++s) {
    out << (s ? "," : "") << json_quote(input.stream_name(static_cast<StreamIndex>(s)));
  }
  out << "],\"categories\":[";
  for (int c = 0; c < kOpCategoryCount; ++c) {
    out << (c ? "," : "") << '"' << category_name(static_cast<OpCategory>(c)) << '"';
  }
  out << "],\"ranks\":[";
  const Time end = Time::from_seconds(input.step_s);
  for (std::size_t r = 0; r < input.ranks.size(); ++r) {
    out << (r ? ",\n" : "\n");
    write_rank(input.ranks[r], end, out);
  }
  out << "]}\n";
}

}  // namespace wallsim
