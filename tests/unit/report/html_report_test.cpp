// report.html is one self-contained page carrying its data; timeline.json is compact and keeps
// the memory peak.
#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/html_report.hpp"
#include "sim/report/op_category.hpp"
#include "sim/report/summary_writers.hpp"
#include "sim/report/timeline.hpp"

using namespace wallsim;
using nlohmann::json;

namespace {

std::string summary_text() {
  RunSummary s;
  s.model_name = "Model </script><b>";
  s.num_gpus = 8;
  s.iteration_time_s = 1.5;
  s.per_stage.push_back(StageMemorySummary{0, 1, 2, 3, 4, 5, 15, 14, 3});
  std::ostringstream out;
  write_summary_json(s, out);
  return out.str();
}

// One rank whose memory rises by 1 byte per sample and falls back once: 3·kTimelineMemoryPoints
// samples, the peak in the middle.
struct MemoryRank {
  OpGraph graph;
  RankTrace trace;
  MemoryRank() {
    Op op;
    op.label = graph.intern_label("fc1 \"fwd\"");
    op.category = category_code(OpCategory::kGemm);
    graph.add(op);
    trace.ops.push_back(OpRecord{Time::from_us(1), Time::from_us(3)});
    const int n = 3 * kTimelineMemoryPoints;
    for (int i = 0; i < n; ++i) {
      const double bytes = i < n / 2 ? i : n - i;
      trace.memory.push_back(MemorySample{Time::from_ns(i), bytes * 1024.0 * 1024 * 1024});
    }
  }
};

}  // namespace

TEST_CASE("report.html embeds the summary safely and loads nothing from the network",
          "[report][html]") {
  std::ostringstream page;
  write_html_report(summary_text(), "", page);
  const std::string html = page.str();
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  // The model name's "</script>" is escaped inside the data block, and in the title.
  CHECK(html.find("Model <\\/script>") != std::string::npos);
  CHECK(html.find("<title>wallsim: Model &lt;/script&gt;&lt;b&gt; on 8 GPUs</title>") !=
        std::string::npos);
  for (const char* external : {"<script src", "<link", "@import", "https://", "url("}) {
    CAPTURE(external);
    CHECK(html.find(external) == std::string::npos);
  }
  CHECK(html.find("document.body.dataset.ok = \"1\"") != std::string::npos);
  CHECK(html.find("id=\"timeline-data\">null</script>") != std::string::npos);
}

TEST_CASE("report.html rejects a summary that is not JSON", "[report][html]") {
  std::ostringstream page;
  CHECK_THROWS_AS(write_html_report("{\"model\": ", "", page), std::invalid_argument);
  CHECK_THROWS_AS(write_html_report(summary_text(), "[1,", page), std::invalid_argument);
}

TEST_CASE("report.html carries the timeline as written, with \"</\" escaped", "[report][html]") {
  // A label that would end the <script> element early; "<\/" is JSON's escape of the same "/".
  const std::string timeline =
      "{\"version\":1,\"step_s\":2.000,\"ranks\":[\n{\"labels\":[\"a</script>b\"]}]}\n";
  std::ostringstream page;
  write_html_report(summary_text(), timeline, page);
  const std::string html = page.str();
  const std::string open = "<script type=\"application/json\" id=\"timeline-data\">";
  const auto from = html.find(open);
  REQUIRE(from != std::string::npos);
  const auto begin = from + open.size();
  const std::string embedded = html.substr(begin, html.find("</script>", begin) - begin);
  CHECK(embedded.find("</") == std::string::npos);
  CHECK(embedded.find("2.000") != std::string::npos);  // not re-serialised
  CHECK(json::parse(embedded) == json::parse(timeline));
}

TEST_CASE("timeline.json lists ops five numbers each and thins memory keeping the peak",
          "[report][timeline]") {
  const MemoryRank rank;
  TraceInput input;
  input.step_s = 3 * kTimelineMemoryPoints * 1e-9;
  input.ranks.push_back(TraceRank{"pp0 tp0 cp0 dp0", 0, 0, 0, &rank.graph, &rank.trace});
  std::ostringstream out;
  write_timeline_json(input, out);
  const json timeline = json::parse(out.str());
  const json& r = timeline["ranks"][0];
  CHECK(r["ops"] == json::array({0, 0, 1.0, 2.0, 0}));
  CHECK(r["labels"] == json::array({"fc1 \"fwd\""}));
  const auto& memory = r["memory"];
  CHECK(memory.size() <= 2 * kTimelineMemoryPoints + 4);
  double peak = 0;
  for (std::size_t i = 1; i < memory.size(); i += 2) peak = std::max(peak, memory[i].get<double>());
  CHECK(peak == Approx(1.5 * kTimelineMemoryPoints));  // n/2 GiB
  CHECK(timeline["categories"][0] == "gemm");
}
