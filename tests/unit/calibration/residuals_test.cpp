#include <sstream>

#include <catch2/catch.hpp>

#include "calibration/fit/residuals.hpp"
#include "test_profiles.hpp"

using namespace wallsim;
using Catch::Matchers::Contains;

TEST_CASE("residual classes report median and max relative error and the worst points") {
  // Errors +10%, −20%, +5%, 0% in one class: |e| sorted 0, 5, 10, 20 -> median 7.5%, max 20%.
  const std::vector<PointResidual> residuals{{"gemm bf16", "a", 1.0, 1.1},
                                             {"gemm bf16", "b", 1.0, 0.8},
                                             {"memory copy", "m", 2.0, 2.0},
                                             {"gemm bf16", "c", 2.0, 2.1},
                                             {"gemm bf16", "d", 1.0, 1.0}};
  const auto classes = summarize_residuals(residuals);
  REQUIRE(classes.size() == 2);
  CHECK(classes[0].op_class == "gemm bf16");
  CHECK(classes[0].points == 4);
  CHECK(classes[0].median_abs_error == Approx(0.075));
  CHECK(classes[0].max_abs_error == Approx(0.2));
  REQUIRE(classes[0].worst.size() == 3);
  CHECK(classes[0].worst[0].label == "b");
  CHECK(classes[0].worst[1].label == "a");
  std::ostringstream out;
  print_residuals(out, classes);
  CHECK_THAT(out.str(), Contains("gemm bf16") && Contains("b (-20.0%)"));
}

TEST_CASE("a profile predicts its own noiseless synthetic points exactly") {
  const auto doc = test::altered_h100_document();
  const auto files = test::synthetic_from(doc, 0.0);
  const auto residuals = predict_points(parse_profile(doc, "t"), test::dgx_h100(), files);
  for (const auto& r : residuals) REQUIRE(std::abs(r.relative_error()) < 1e-9);
}

TEST_CASE("collective points without a cluster are an input error") {
  const auto files = test::synthetic_from(test::h100_document(), 0.0);
  CHECK_THROWS_WITH(predict_points(parse_profile(test::h100_document(), "t"), std::nullopt, files),
                    Contains("--cluster"));
}
