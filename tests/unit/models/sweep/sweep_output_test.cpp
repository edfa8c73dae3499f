#include <sstream>

#include <catch2/catch.hpp>

#include "models/sweep/sweep_html.hpp"
#include "models/sweep/sweep_journal.hpp"
#include "models/sweep/sweep_writers.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

SweepRow row(std::int64_t index, std::int64_t tp, double step_s, double peak_gib,
             std::string error = "") {
  SweepRow r;
  r.index = index;
  r.point.tp = tp;
  r.id = point_id(r.point);
  r.step_time_s = error.empty() ? step_s : 0;
  r.tokens_per_s_per_gpu = error.empty() ? 1000 / step_s : 0;
  r.mfu = 0.4;
  r.peak_bytes = peak_gib * 1024 * 1024 * 1024;
  r.hbm_bytes = 80.0 * 1024 * 1024 * 1024;
  r.fits = true;
  r.binding = error.empty() ? "compute" : "";
  r.error = std::move(error);
  r.megatron_args =
      "--tensor-model-parallel-size " + std::to_string(tp) + " --moe-layer-freq '<2>'";
  return r;
}

SweepReport report_with(std::vector<SweepRow> rows, ShardSpec shard = {}) {
  SweepReport r;
  r.model = "m";
  r.cluster = "c";
  r.num_gpus = 8;
  r.fingerprint = "abc";
  r.shard = shard;
  r.space = {{"tp", "1,2,4"}};
  r.counts.points = 10;
  r.counts.pruned_by_layout = 10 - static_cast<std::int64_t>(rows.size());
  r.counts.layout_reasons["parallel.tp"] = r.counts.pruned_by_layout;
  r.counts.reason_examples["parallel.tp"] = "x: parallel.tp = 3: must divide";
  r.counts.simulated = static_cast<std::int64_t>(rows.size());
  r.rows = std::move(rows);
  sort_rows(r.rows);
  return r;
}

std::string csv(const SweepReport& report) {
  std::ostringstream out;
  write_sweep_csv(report, out);
  return out.str();
}

}  // namespace

TEST_CASE("rows sort by step time, ties by id, failed points last", "[sweep]") {
  std::vector<SweepRow> rows{row(0, 4, 2.0, 10), row(1, 2, 1.0, 10), row(2, 1, 0, 10, "stuck"),
                             row(3, 8, 2.0, 10)};
  sort_rows(rows);
  CHECK(rows[0].id == "tp2-cp1-pp1-vpp1-mb1-none");
  CHECK(rows[1].id == "tp4-cp1-pp1-vpp1-mb1-none");  // 2.0 s tie: "tp4" < "tp8"
  CHECK(rows[2].id == "tp8-cp1-pp1-vpp1-mb1-none");
  CHECK(rows[3].failed());
}

TEST_CASE("sweep.csv has one ranked line per row and quotes errors with commas", "[sweep]") {
  const std::string text = csv(report_with({row(0, 2, 1.5, 10), row(1, 4, 0, 10, "a, b")}));
  std::istringstream lines(text);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  CHECK(header.rfind("rank,id,tp,sp,cp,pp,vpp,dp,", 0) == 0);
  CHECK(first.rfind("1,tp2-cp1-pp1-vpp1-mb1-none,2,true,1,1,1,1,1,1,none,true,true,1,1,alltoall,"
                    "1f1b,optimizer,"
                    "1.5,",
                    0) == 0);
  CHECK(first.find(",10737418240,") != std::string::npos);  // 10 GiB as whole bytes
  CHECK(second.find(",\"a, b\",configs/tp4-cp1-pp1-vpp1-mb1-none.json") != std::string::npos);
}

TEST_CASE("sweep.json reads back into the same report", "[sweep]") {
  const SweepReport report = report_with({row(0, 2, 1.5, 10), row(1, 4, 0, 10, "stuck")});
  const SweepReport back = report_from_json(report_to_json(report), "sweep.json");
  CHECK(csv(back) == csv(report));
  CHECK(back.counts.layout_reasons == report.counts.layout_reasons);
  CHECK(back.rows[0].megatron_args == report.rows[0].megatron_args);
  CHECK(report_to_json(report)["rows"][0]["megatron_args"] ==
        "--tensor-model-parallel-size 2 --moe-layer-freq '<2>'");
  CHECK_THROWS_AS(report_from_json(nlohmann::json::object(), "x.json"), InputError);
}

TEST_CASE("merging shards gives the whole sweep, and a missing or repeated shard is refused",
          "[sweep]") {
  const SweepReport whole = report_with({row(0, 1, 3, 10), row(1, 2, 2, 10), row(2, 4, 1, 10)});
  SweepReport a = report_with({row(0, 1, 3, 10), row(2, 4, 1, 10)}, {0, 2});
  SweepReport b = report_with({row(1, 2, 2, 10)}, {1, 2});
  a.counts.points = 6;
  b.counts.points = 4;
  const SweepReport merged = merge_reports({b, a}, {"b", "a"});
  CHECK(csv(merged) == csv(whole));
  CHECK(merged.counts.points == 10);
  CHECK(merged.counts.simulated == 3);
  CHECK_THROWS_WITH(merge_reports({a}, {"a"}), Catch::Contains("1/2 is missing"));
  CHECK_THROWS_WITH(merge_reports({a, a, b}, {"a", "a2", "b"}), Catch::Contains("already given"));
  SweepReport other = b;
  other.fingerprint = "def";
  CHECK_THROWS_WITH(merge_reports({a, other}, {"a", "other"}), Catch::Contains("same sweep"));
}

TEST_CASE("the Pareto front keeps rows no other row beats on throughput and memory", "[sweep]") {
  // (tokens/s, GiB): A (500, 10), B (1000, 20), C (400, 30) dominated by B, D (2000, 40),
  // E (1000, 50) dominated by D.
  std::vector<SweepRow> rows{row(0, 1, 2.0, 10), row(1, 2, 1.0, 20), row(2, 4, 2.5, 30),
                             row(3, 8, 0.5, 40), row(4, 16, 1.0, 50)};
  const auto front = pareto_front(rows);
  REQUIRE(front.size() == 3);
  CHECK(front[0].point.tp == 1);
  CHECK(front[1].point.tp == 2);
  CHECK(front[2].point.tp == 8);
}

TEST_CASE("sweep.html is one self-contained page", "[sweep]") {
  std::ostringstream out;
  write_sweep_html(report_with({row(0, 2, 1.5, 10), row(1, 4, 1.0, 12)}), out);
  const std::string html = out.str();
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("Pareto") != std::string::npos);
  CHECK(html.find("wallsim run configs/tp4-cp1-pp1-vpp1-mb1-none.json") != std::string::npos);
  // Each ranked row's Megatron-LM arguments, escaped for HTML.
  CHECK(html.find("--tensor-model-parallel-size 4 --moe-layer-freq '&lt;2&gt;'") !=
        std::string::npos);
  CHECK(html.find("<script src") == std::string::npos);
  CHECK(html.find("http://") == html.find("http://www.w3.org/2000/svg"));  // no external fetch
}

TEST_CASE("the journal reads back its rows and skips a line cut short", "[sweep]") {
  std::ostringstream out;
  write_journal_header(out, "fp", {1, 4});
  write_journal_row(out, row(5, 2, 1.5, 10));
  write_journal_row(out, row(9, 4, 1.25, 10));
  const std::string whole = out.str();
  std::istringstream full(whole);
  CHECK(read_journal(full, "fp", {1, 4}, "j").size() == 2);
  std::istringstream cut(whole.substr(0, whole.size() - 7));  // the last row half written
  const auto rows = read_journal(cut, "fp", {1, 4}, "j");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].index == 5);
  std::istringstream again(whole);
  CHECK_THROWS_WITH(read_journal(again, "other", {1, 4}, "j"), Catch::Contains("another sweep"));
}
