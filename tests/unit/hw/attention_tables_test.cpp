#include "sim/hw/attention_tables.hpp"

#include <stdexcept>

#include <catch2/catch.hpp>

using namespace wallsim;

namespace {

AttentionTable flat(AttentionPass pass, bool causal, double head_dim, double flops) {
  return {pass, causal, head_dim, LogCurve({{1024, flops}})};
}

AttentionTables four_tables(double fwd_flops) {
  return AttentionTables("test", {flat(AttentionPass::kForward, false, 64, fwd_flops),
                                  flat(AttentionPass::kForward, false, 256, 3 * fwd_flops),
                                  flat(AttentionPass::kForward, true, 128, 1.0),
                                  flat(AttentionPass::kBackward, false, 128, 2.0),
                                  flat(AttentionPass::kBackward, true, 128, 3.0)});
}

}  // namespace

TEST_CASE("attention throughput interpolates in log2(head_dim) between tables", "[hw][attn]") {
  const auto tables = four_tables(100.0);
  // 128 is halfway between 64 and 256 in log2: halfway between 100 and 300.
  CHECK(tables.achieved_flops(AttentionPass::kForward, false, 128, 4096) == Approx(200.0));
  // Outside the measured head dims: the nearest table.
  CHECK(tables.achieved_flops(AttentionPass::kForward, false, 32, 4096) == Approx(100.0));
  CHECK(tables.achieved_flops(AttentionPass::kForward, false, 512, 4096) == Approx(300.0));
}

TEST_CASE("attention tables pick the pass and the mask", "[hw][attn]") {
  const auto tables = four_tables(100.0);
  CHECK(tables.achieved_flops(AttentionPass::kForward, true, 128, 4096) == Approx(1.0));
  CHECK(tables.achieved_flops(AttentionPass::kBackward, false, 128, 4096) == Approx(2.0));
  CHECK(tables.achieved_flops(AttentionPass::kBackward, true, 128, 4096) == Approx(3.0));
}

TEST_CASE("attention tables need every pass and mask", "[hw][attn]") {
  CHECK_THROWS_AS(AttentionTables("test", {flat(AttentionPass::kForward, false, 64, 1.0)}),
                  std::invalid_argument);
}
