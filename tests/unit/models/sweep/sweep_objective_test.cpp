// Ranking a sweep by a statistic of sampled steps, and marking layouts whose validation band
// overlaps the best one's.
#include <sstream>

#include <catch2/catch.hpp>

#include "models/sweep/sweep_writers.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

SweepRow sampled(std::int64_t tp, double step_s, double p50_s, double p90_s) {
  SweepRow r;
  r.index = tp;
  r.point.tp = tp;
  r.id = point_id(r.point);
  r.step_time_s = step_s;
  r.tokens_per_s_per_gpu = 1000 / step_s;
  r.binding = "compute";
  r.distribution = Percentiles{p50_s * 0.99, p50_s, p90_s, (p50_s + p90_s) / 2};
  return r;
}

// tp1 has the better median, tp2 the better p90 (a wider spread on tp1).
std::vector<SweepRow> two_layouts() {
  return {sampled(1, 1.00, 1.00, 1.30), sampled(2, 1.05, 1.05, 1.10)};
}

}  // namespace

TEST_CASE("a sweep ranked by p90 puts the layout with the shorter slow steps first", "[sweep]") {
  auto rows = two_layouts();
  sort_rows(rows, SweepObjective::p50);
  CHECK(rows.front().point.tp == 1);
  sort_rows(rows, SweepObjective::p90);
  CHECK(rows.front().point.tp == 2);
  // mean: tp1 (1.00 + 1.30) / 2 = 1.15 against tp2 (1.05 + 1.10) / 2 = 1.075.
  sort_rows(rows, SweepObjective::mean);
  CHECK(rows.front().point.tp == 2);
  sort_rows(rows, SweepObjective::step);
  CHECK(rows.front().point.tp == 1);
}

TEST_CASE("objective names parse and unknown ones are refused", "[sweep]") {
  CHECK(parse_sweep_objective("p90") == SweepObjective::p90);
  CHECK(parse_sweep_objective("step") == SweepObjective::step);
  CHECK_FALSE(parse_sweep_objective("p99"));
}

TEST_CASE("sampled rows round-trip through sweep.json with their spread and objective", "[sweep]") {
  SweepReport report;
  report.rows = two_layouts();
  report.objective = SweepObjective::p90;
  report.samples = 20;
  sort_rows(report.rows, report.objective);
  const SweepReport back = report_from_json(report_to_json(report), "sweep.json");
  CHECK(back.objective == SweepObjective::p90);
  CHECK(back.samples == 20);
  REQUIRE(back.rows.size() == 2);
  REQUIRE(back.rows[0].distribution);
  CHECK(back.rows[0].distribution->p90 == 1.10);
}

TEST_CASE("a layout overlaps the best one's band when its fast end reaches the best's slow end",
          "[sweep]") {
  SweepReport report;
  report.rows = {sampled(1, 1.00, 1.00, 1.0), sampled(2, 1.15, 1.15, 1.15),
                 sampled(4, 1.30, 1.30, 1.30)};
  PredictionInterval band;
  band.error_p10 = -0.1;  // the best could measure 1 / 0.9 = 1.111 s
  band.error_p90 = 0.1;   // tp2 could measure 1.15 / 1.1 = 1.045 s: overlaps; tp4 1.182 s: not
  band.rows = 10;
  band.basis = "h100-sxm, dense, < 32K tokens";
  report.band = band;
  CHECK(overlaps_best_band(report, 0));
  CHECK(overlaps_best_band(report, 1));
  CHECK_FALSE(overlaps_best_band(report, 2));
  std::ostringstream text;
  write_sweep_text(report, text);
  CHECK_THAT(text.str(), Catch::Contains("~best: 2 of 3 layouts"));
  const auto json = report_to_json(report);
  CHECK(json["rows"][1]["band_overlaps_best"] == true);
  CHECK(json["rows"][2]["band_overlaps_best"] == false);
  CHECK(report_from_json(json, "sweep.json").band->error_p90 == 0.1);
}
