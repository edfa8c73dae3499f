#include <catch2/catch.hpp>

#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/report/summary_writers.hpp"

using namespace wallsim;

namespace {

RunSummary sample() {
  RunSummary s;
  s.model_name = "m";
  s.cluster_name = "c";
  s.num_gpus = 8;
  s.iteration_time_s = 2.0;
  s.mfu = 0.4;
  s.per_stage.push_back(StageMemorySummary{0, 1, 2, 3, 4, 5, 15, 14, 3});
  s.time.step_s = 2.0;
  s.time.exposed_comm_s[category_slot(OpCategory::kEp)] = 0.25;
  s.walls.binding = "compute";
  return s;
}

}  // namespace

TEST_CASE("summary.json carries the documented field names", "[report][writers]") {
  std::ostringstream out;
  write_summary_json(sample(), out);
  const auto json = nlohmann::json::parse(out.str());
  CHECK(json["iteration_time_s"] == 2.0);
  CHECK(json["mfu"] == 0.4);
  CHECK(json["time"]["exposed_comm_s"]["ep"] == 0.25);
  for (const char* group : {"tp", "cp", "ep", "dp", "pp"}) {
    CHECK(json["time"]["exposed_comm_s"].contains(group));
  }
  for (const char* key :
       {"stage", "weights", "grads", "optimizer", "activations", "buffers", "peak"}) {
    CHECK(json["memory"]["per_stage"][0].contains(key));
  }
  CHECK(json["walls"]["binding"] == "compute");
  CHECK(json["walls"]["memory"].contains("utilization"));
  CHECK(json.contains("fits_in_memory"));
  CHECK(json["flops"].contains("model_per_iteration"));
}

TEST_CASE("the same summary always writes the same bytes", "[report][writers]") {
  std::ostringstream a, b, c, d;
  write_summary_json(sample(), a);
  write_summary_json(sample(), b);
  write_summary_text(sample(), c);
  write_summary_text(sample(), d);
  CHECK(a.str() == b.str());
  CHECK(c.str() == d.str());
}
