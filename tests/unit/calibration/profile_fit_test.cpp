#include <catch2/catch.hpp>

#include <set>
#include <tuple>

#include "calibration/fit/profile_fit.hpp"
#include "calibration/fit/residuals.hpp"
#include "sim/core/input_error.hpp"
#include "test_profiles.hpp"

using namespace wallsim;
using Catch::Matchers::Contains;

namespace {

std::vector<RawFile> recorded_files() {
  std::vector<RawFile> files;
  for (const char* kind : {"gemm", "attention", "memory", "collective"}) {
    files.push_back(load_raw_file(test::source_file(
        std::string("tests/data/calibration/h100-sxm-synthetic.") + kind + ".raw.json")));
  }
  return files;
}

ProfileFit fit_recorded() {
  return fit_profile(test::h100_document(), "h100-sxm.json", recorded_files(), test::dgx_h100());
}

}  // namespace

TEST_CASE("the recorded raw files are labelled synthetic") {
  for (const RawFile& raw : recorded_files()) {
    CHECK(raw.tool == kSyntheticTool);
    CHECK_THAT(raw.hardware.at("gpu"), Contains("modelled by profile h100-sxm"));
  }
}

TEST_CASE("fitting the recorded raw files gives back the profile they were drawn from") {
  const ProfileFit fit = fit_recorded();
  const Profile& p = fit.profile;
  // The recorded files are the shipped h100-sxm profile plus 2% noise (seed 42); tolerances as
  // derived in kernel_fit_test.cpp and comm_fit_test.cpp.
  CHECK(p.gpu.compute.at(Dtype::kBf16).gemm_best_flops / 794.5e12 == Approx(1.017).margin(0.018));
  CHECK(p.gpu.kernel_launch_overhead.us() == Approx(1.0).epsilon(0.05));
  CHECK(p.comm.nvlink_efficiency == Approx(0.824).epsilon(0.02));
  CHECK(p.comm.nvls_efficiency == Approx(0.829).epsilon(0.03));
  CHECK(p.comm.network_efficiency == Approx(0.94).epsilon(0.03));
  CHECK(fit.document["provenance"]["tool"] == "wallsim calibrate fit 0.1.0");
  CHECK_THAT(fit.document["provenance"]["source"].get<std::string>(),
             Contains("not a measurement"));
}

TEST_CASE("the fit is deterministic: same raw files, same profile text") {
  CHECK(fit_recorded().document.dump() == fit_recorded().document.dump());
}

TEST_CASE("the fitted profile predicts the recorded points to within their noise") {
  const ProfileFit fit = fit_recorded();
  const auto classes =
      summarize_residuals(predict_points(fit.profile, test::dgx_h100(), recorded_files()));
  REQUIRE(classes.size() >= 10);
  for (const auto& c : classes) {
    INFO(c.op_class);
    // Pure 2% noise gives a median |error| of 0.674 · 2% = 1.35%; fitting error adds a little.
    CHECK(c.median_abs_error < 0.025);
  }
}

TEST_CASE("fit errors: collectives without a cluster, a dtype the base lacks, no files") {
  const auto files = recorded_files();
  CHECK_THROWS_WITH(fit_profile(test::h100_document(), "b", files, std::nullopt),
                    Contains("--cluster"));
  const auto a100 = load_json_file(test::source_file("calibration/profiles/a100-sxm-80gb.json"));
  CHECK_THROWS_WITH(fit_profile(a100, "a100.json", {files[0]}, std::nullopt), Contains("fp8"));
  CHECK_THROWS_AS(fit_profile(test::h100_document(), "b", {}, std::nullopt), InputError);
}

TEST_CASE("a fit of kernels alone keeps the base's comm section") {
  const auto files = recorded_files();
  const ProfileFit fit = fit_profile(test::h100_document(), "b", {files[2]}, std::nullopt);
  CHECK(fit.document["comm"] == test::h100_document()["comm"]);
  CHECK(fit.document["gpu"]["gemm"] == test::h100_document()["gpu"]["gemm"]);
  CHECK(fit.document["gpu"]["kernel_launch_overhead_us"] != 1.0);
}

TEST_CASE("a fit's grouped points make its grouped table, and with none the base's is dropped") {
  // The base's grouped measurements came from another machine: the fitted profile takes the
  // grouped points measured beside its dense ones (batch > 1: `batch` equal problems, keyed by
  // one problem's (m, n, k)), and without any folds grouped GEMMs into its own dense table.
  nlohmann::json base = test::h100_document();
  base["gpu"]["gemm"]["grouped_measured"]["bf16"] = {
      {"source", "test"}, {"points", {{{"m", 1024}, {"n", 4096}, {"k", 7168}, {"tflops", 500}}}}};
  const RawFile gemm = recorded_files()[0];
  const ProfileFit fit = fit_profile(base, "b", {gemm}, std::nullopt);
  const nlohmann::json& tables = fit.document["gpu"]["gemm"];
  // The recorded file's grouped points: 8 and 64 experts x 128, 512, 2048 tokens x two
  // problems (n 3072, k 4096 and n 4096, k 1536) per dtype. The fit keeps compute-bound points
  // (bytes at the base's HBM rate under half the run time). 2048 x 3072 x 4096 x 8 in bf16:
  // 2·2048·3072·4096·8 = 4.1e11 FLOP, ~0.59 ms at ~700 TFLOP/s; bytes 2·(2048·4096 + 4096·3072
  // + 2048·3072)·8 = 437 MB, 0.15 ms at 0.9 · 3.35 TB/s: a quarter, compute-bound. At 512
  // tokens: 1.0e11 FLOP, 0.15 ms, against 260 MB, 0.086 ms: 0.59 of it, left out; 128 tokens
  // even more so. So two problem shapes, both of 2048 rows, each the median of 8 and 64 experts.
  const nlohmann::json& grouped = tables["grouped_measured"]["bf16"];
  CHECK(grouped["source"] != "test");
  REQUIRE(grouped["points"].size() == 2);
  for (const auto& row : grouped["points"]) CHECK(row["m"] == 2048);
  CHECK(tables["grouped_measured"].contains("fp8"));
  // No grouped point is folded into the dense table: no dense row at (m · batch, n, k) unless
  // the file measured that dense shape too.
  std::set<std::tuple<std::int64_t, std::int64_t, std::int64_t>> dense_measured, dense_table;
  for (const GemmPoint& p : gemm.gemm) {
    if (p.shape.batch == 1) dense_measured.insert({p.shape.m, p.shape.n, p.shape.k});
  }
  for (const auto& row : tables["measured"]["bf16"]["points"]) {
    dense_table.insert(
        {row["m"].get<std::int64_t>(), row["n"].get<std::int64_t>(), row["k"].get<std::int64_t>()});
  }
  for (const GemmPoint& p : gemm.gemm) {
    const std::tuple<std::int64_t, std::int64_t, std::int64_t> folded{p.shape.m * p.shape.batch,
                                                                      p.shape.n, p.shape.k};
    if (p.shape.batch > 1 && !dense_measured.count(folded)) CHECK(dense_table.count(folded) == 0);
  }

  RawFile dense_only = gemm;
  std::erase_if(dense_only.gemm, [](const GemmPoint& p) { return p.shape.batch > 1; });
  const ProfileFit dense = fit_profile(base, "b", {dense_only}, std::nullopt);
  CHECK_FALSE(dense.document["gpu"]["gemm"].contains("grouped_measured"));
  // Grouped points alone: the base's dense table stays, the grouped one is the fit's.
  RawFile grouped_only = gemm;
  std::erase_if(grouped_only.gemm, [](const GemmPoint& p) { return p.shape.batch == 1; });
  const ProfileFit alone = fit_profile(base, "b", {grouped_only}, std::nullopt);
  CHECK(alone.document["gpu"]["gemm"]["measured"] == base["gpu"]["gemm"]["measured"]);
  CHECK(alone.document["gpu"]["gemm"]["grouped_measured"]["bf16"]["points"].size() == 2);
  // A kernel fit without GEMMs keeps the base's.
  const ProfileFit memory = fit_profile(base, "b", {recorded_files()[2]}, std::nullopt);
  CHECK(memory.document["gpu"]["gemm"]["grouped_measured"] ==
        base["gpu"]["gemm"]["grouped_measured"]);
}
