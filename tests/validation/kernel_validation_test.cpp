// The shipped H200 profile against measurements on an H200 (calibration/measured/h200-sxm/
// README.md): the points it was fitted from must come back through the model that reads the
// tables (GpuModel), and attn_bench's points, which the fit did not use (cuDNN 9.14 through
// its backend graph, against the profile's cuDNN 9.19 through PyTorch), bound how far two
// cuDNN releases on one GPU are apart. The test prints each class's residuals.
#include <catch2/catch.hpp>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "calibration/fit/fit_math.hpp"
#include "calibration/fit/residuals.hpp"
#include "calibration/profile.hpp"
#include "calibration/raw/raw_data.hpp"

using namespace wallsim;

namespace {

std::string measured(const std::string& file) {
  return std::string(WALLSIM_SOURCE_ROOT) + "/calibration/measured/h200-sxm/" + file;
}

const Profile& h200() {
  static const Profile profile = load_profile(shipped_profile_path("h200-sxm"));
  return profile;
}

std::vector<PointResidual> residuals_of(const std::string& file) {
  return predict_points(h200(), std::nullopt, {load_raw_file(measured(file))});
}

double quantile_abs(const std::vector<PointResidual>& points, double q) {
  std::vector<double> errors;
  for (const PointResidual& p : points) errors.push_back(std::abs(p.relative_error()));
  return quantile(errors, q);
}

std::vector<PointResidual> select(const std::vector<PointResidual>& points,
                                  const std::string& op_class) {
  std::vector<PointResidual> out;
  for (const PointResidual& p : points) {
    if (p.op_class == op_class) out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("the H200 profile gives back the GEMMs it was measured from", "[validation]") {
  const auto all = residuals_of("gemm_bench.raw.json");
  print_residuals(std::cout, summarize_residuals(all));
  for (const char* dtype : {"gemm bf16", "gemm fp8"}) {
    const auto points = select(all, dtype);
    REQUIRE(points.size() == 488);
    INFO(dtype);
    // Every compute-bound shape is a point of the table, so most come back exactly (median 0);
    // the rest are memory-bound shapes read at the nearest point and shapes measured twice
    // (grid and model list) at the median of both. Half the points within 0.1%.
    CHECK(quantile_abs(points, 0.5) < 1e-3);
    CHECK(quantile_abs(points, 0.9) < 0.10);
  }
}

TEST_CASE("the H200 profile gives back the attention it was measured from", "[validation]") {
  const auto all = residuals_of("attn_torch_cudnn.raw.json");
  print_residuals(std::cout, summarize_residuals(all));
  REQUIRE(all.size() == 60);
  // One point per table entry (pass, causal, head dim, sequence): each read back exactly.
  CHECK(quantile_abs(all, 1.0) < 1e-6);
}

TEST_CASE("the H200 profile streams large transfers at their measured rate", "[validation]") {
  const auto all = residuals_of("mem_bench.raw.json");
  print_residuals(std::cout, summarize_residuals(all));
  // The launch gap is the empty kernels' intercept: each within 2% (8 samples, 0.67 us each).
  CHECK(quantile_abs(select(all, "memory empty"), 1.0) < 0.02);
  // Transfers of 1 GiB and more: the curve's top bins are medians over copy, residual add,
  // SwiGLU and RMSNorm, which stream at 3.96 to 4.14 TB/s: each within 5%.
  std::vector<PointResidual> large;
  for (const PointResidual& p : all) {
    if (p.op_class != "memory empty" && std::stod(p.label) >= 1073741824.0) large.push_back(p);
  }
  REQUIRE(large.size() >= 8);
  CHECK(quantile_abs(large, 1.0) < 0.05);
}

TEST_CASE("attn_bench's cuDNN 9.14 points stay near the profile's cuDNN 9.19 tables",
          "[validation]") {
  const auto all = residuals_of("attn_bench.raw.json");
  print_residuals(std::cout, summarize_residuals(all));
  REQUIRE(all.size() == 144);
  // Not fitted: the same GPU, another cuDNN release and graph. Measured apart by a median of
  // 10.5% (forward 9.3%, backward 11.9%; head dim 64 backward slowest on 9.14, up to 37%);
  // bounds as validation's rule sets them (0.15, or the first 0.05 step above the error).
  CHECK(quantile_abs(all, 0.5) < 0.15);
  CHECK(quantile_abs(all, 1.0) < 0.40);
}
