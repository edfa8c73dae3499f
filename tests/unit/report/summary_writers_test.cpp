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
  CHECK(json["compute"]["kernel_families"].is_array());
  CHECK(json["compute"]["peak_flops_by_kind"].contains("gemm"));
  CHECK(json["compute"].contains("hbm_bandwidth_Bps"));
}

TEST_CASE("summary.json reports allocated and reserved beside the peak, per stage and overall",
          "[report][writers]") {
  RunSummary s = sample();
  s.hbm_bytes = 16;
  s.peak_bytes = 15;
  s.peak_allocated_bytes = 12;
  s.peak_reserved_bytes = 13;
  s.fit_margin = 0.05;
  s.per_stage[0].allocated = 12;
  s.per_stage[0].reserved = 13;
  std::ostringstream out;
  write_summary_json(s, out);
  const auto json = nlohmann::json::parse(out.str());
  CHECK(json["memory"]["peak_bytes"] == 15.0);
  CHECK(json["memory"]["peak_allocated_bytes"] == 12.0);
  CHECK(json["memory"]["peak_reserved_bytes"] == 13.0);
  CHECK(json["memory"]["fit_margin"] == 0.05);
  CHECK(json["memory"]["hbm_bytes"] == 16.0);
  CHECK(json["memory"]["per_stage"][0]["allocated"] == 12.0);
  CHECK(json["memory"]["per_stage"][0]["reserved"] == 13.0);
  CHECK(json["memory"]["per_stage"][0]["simulated_peak"] == 3.0);
}

TEST_CASE("the text summary flags a stage whose peak eats into the fit margin",
          "[report][writers]") {
  RunSummary s = sample();  // stage 0 peaks at 15 bytes
  s.hbm_bytes = 15.5;       // above the peak, but 95% of it (14.7) is not
  s.fit_margin = 0.05;
  std::ostringstream tight;
  write_summary_text(s, tight);
  CHECK(tight.str().find("DOES NOT FIT") != std::string::npos);
  s.fit_margin = 0;
  std::ostringstream roomy;
  write_summary_text(s, roomy);
  CHECK(roomy.str().find("DOES NOT FIT") == std::string::npos);
}

namespace {

KernelFamily family(const std::string& name, double time_s) {
  KernelFamily f;
  f.family = name;
  f.kind = "elementwise";
  f.ops = 4;
  f.time_s = time_s;
  f.share = time_s / 2.1;
  f.bytes = 1e12;
  f.GBps = f.bytes / time_s / 1e9;
  f.hbm_fraction = f.GBps / 2000;  // a 2,000 GB/s HBM
  return f;
}

// Six families, in the order summarize leaves them (by time descending).
RunSummary with_families() {
  RunSummary s = sample();
  for (int i = 0; i < 6; ++i) {
    s.kernel_families.push_back(family("family " + std::string(1, 'a' + i), 0.6 - 0.1 * i));
  }
  s.kernel_families[0].host_wait_s = 0.25;
  return s;
}

}  // namespace

TEST_CASE("summary.json lists every kernel family with its rates", "[report][writers]") {
  std::ostringstream out;
  write_summary_json(with_families(), out);
  const auto json = nlohmann::json::parse(out.str());
  const auto& families = json["compute"]["kernel_families"];
  REQUIRE(families.size() == 6);
  CHECK(families[0]["family"] == "family a");
  CHECK(families[0]["host_wait_s"] == 0.25);
  for (const char* key : {"family", "kind", "ops", "time_s", "share", "host_wait_s", "flops",
                          "tflops_per_s", "peak_fraction", "bytes", "GBps", "hbm_fraction"}) {
    CAPTURE(key);
    CHECK(families[5].contains(key));
  }
}

TEST_CASE("the console lists the five longest kernel families under the compute line",
          "[report][writers]") {
  std::ostringstream out;
  write_summary_text(with_families(), out);
  const std::string text = out.str();
  const auto compute = text.find("(compute: gemm");
  const auto heading = text.find("kernel families, top 5 of 6");
  REQUIRE(compute != std::string::npos);
  REQUIRE(heading != std::string::npos);
  CHECK(heading > compute);
  for (const char* shown : {"family a", "family b", "family c", "family d", "family e"}) {
    CAPTURE(shown);
    CHECK(text.find(shown) != std::string::npos);
  }
  CHECK(text.find("family f") == std::string::npos);
  // family a: 0.6 s of 2.1 s is 28.6%; 0.25 s waiting for the host; 1 TB in 0.6 s is
  // 1,667 GB/s, 83% of 2,000.
  CHECK(text.find("        family a                         0.600 s   28.6%  host  0.250 s"
                  "      1667 GB/s      83% of HBM\n") != std::string::npos);
}

TEST_CASE("the same summary always writes the same bytes", "[report][writers]") {
  std::ostringstream a, b, c, d;
  write_summary_json(with_families(), a);
  write_summary_json(with_families(), b);
  write_summary_text(with_families(), c);
  write_summary_text(with_families(), d);
  CHECK(a.str() == b.str());
  CHECK(c.str() == d.str());
}
