#include "sim/hw/gpu_profile.hpp"

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "shipped_profile.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

using namespace wallsim;
using Catch::Matchers::Contains;

namespace {

GpuProfile parse_section(const nlohmann::json& gpu) {
  return parse_gpu_profile(JsonNode(gpu, "test.json", "gpu"));
}

nlohmann::json shipped_section(const std::string& name) {
  return load_json_file(test::shipped_profile_file(name)).at("gpu");
}

}  // namespace

TEST_CASE("every shipped profile parses with its datasheet numbers", "[hw][profile]") {
  const GpuProfile h100 = test::load_shipped_gpu("h100-sxm");
  CHECK(h100.sms == 132);
  CHECK(h100.peak_flops(Dtype::kBf16) == Approx(989.4e12));
  CHECK(h100.peak_flops(Dtype::kFp8) == Approx(1978.9e12));
  CHECK(h100.hbm_bandwidth_Bps == Approx(3.35e12));
  CHECK(h100.hbm_bytes == Approx(80.0 * (1 << 30)));
  CHECK(h100.comm_kernel_sms == 16);
  CHECK(h100.gemm_best_fraction(Dtype::kBf16) == Approx(794.5 / 989.4));
  CHECK(h100.attention_tables(AttentionKernel::kFlash3).kernel() == "FlashAttention-3");

  const GpuProfile h200 = test::load_shipped_gpu("h200-sxm");
  CHECK(h200.hbm_bandwidth_Bps == Approx(4.8e12));
  // Measured (calibration/measured/h200-sxm/gemm_bench.raw.json): 8192^3 bf16 took
  // 1636.27 us with the fitted 0.673 us launch gap, 2 * 8192^3 / 1635.60 us = 672.2 TFLOP/s.
  CHECK(h200.gemm.table(Dtype::kBf16)->flops_per_s(8192, 8192, 8192) ==
        Approx(672.2e12).epsilon(1e-4));

  const GpuProfile a100 = test::load_shipped_gpu("a100-sxm-80gb");
  CHECK(a100.sms == 108);
  CHECK(a100.gemm_best_fraction(Dtype::kBf16) == Approx(271.2 / 312.0));
  CHECK_FALSE(a100.supports(Dtype::kFp8));
}

TEST_CASE("the Blackwell profiles parse with their datasheet and MAMF numbers", "[hw][profile]") {
  // docs/reference/blackwell.md §1 (specifications) and §2 (MAMF best shapes).
  const GpuProfile b200 = test::load_shipped_gpu("b200");
  CHECK(b200.sms == 148);
  CHECK(b200.compute_capability == 100);
  CHECK(b200.peak_flops(Dtype::kBf16) == Approx(2250e12));
  CHECK(b200.peak_flops(Dtype::kFp8) == Approx(4500e12));
  CHECK(b200.hbm_bandwidth_Bps == Approx(8.0e12));
  CHECK(b200.hbm_bytes == Approx(180.0 * (1 << 30)));
  CHECK(b200.gemm_best_fraction(Dtype::kBf16) == Approx(1745.0 / 2250));

  const GpuProfile gb200 = test::load_shipped_gpu("gb200");
  CHECK(gb200.peak_flops(Dtype::kBf16) == Approx(2500e12));
  CHECK(gb200.hbm_bytes == Approx(186.0 * (1 << 30)));
  CHECK(gb200.gemm_best_fraction(Dtype::kFp8) == Approx(3615.6 / 5000));

  const GpuProfile b300 = test::load_shipped_gpu("b300");
  CHECK(b300.sms == 160);
  CHECK(b300.compute_capability == 103);
  CHECK(b300.hbm_bytes == Approx(270.0 * (1 << 30)));
  CHECK(b300.gemm_best_fraction(Dtype::kBf16) == Approx(1769.0 / 2250));

  const GpuProfile gb300 = test::load_shipped_gpu("gb300");
  CHECK(gb300.peak_flops(Dtype::kFp8) == Approx(5000e12));
  // FP4 (blackwell.md §7): dense peaks 9000 / 10000 / 13125 / 15000; no FP4 MAMF is published, so
  // the best shape is the FP8 one's fraction of peak (GB300: 3615.6 / 5000 = 0.72312).
  CHECK(b200.peak_flops(Dtype::kFp4) == Approx(9000e12));
  CHECK(gb200.peak_flops(Dtype::kFp4) == Approx(10000e12));
  CHECK(b300.peak_flops(Dtype::kFp4) == Approx(13125e12));
  CHECK(gb300.peak_flops(Dtype::kFp4) == Approx(15000e12));
  CHECK(gb300.gemm_best_fraction(Dtype::kFp4) == Approx(3615.6 / 5000).epsilon(1e-4));
  CHECK_FALSE(test::load_shipped_gpu("h100-sxm").supports(Dtype::kFp4));
  CHECK(gb300.hbm_bytes == Approx(279.0 * (1 << 30)));
}

TEST_CASE("Blackwell attention is Hopper's at the same fraction of the BF16 peak",
          "[hw][profile]") {
  // The transfer rule (docs/reference/blackwell.md §7): every entry x peak_bf16 / 989.4. H100's
  // cuDNN causal forward at hdim 128 and 8k is 529 TFLOP/s, so B200 runs it at
  // 529 x 2250 / 989.4 = 1203.0 and GB200 at 529 x 2500 / 989.4 = 1336.7.
  const auto rate = [](const std::string& gpu) {
    return test::load_shipped_gpu(gpu)
        .attention_tables(AttentionKernel::kCudnn)
        .achieved_flops(AttentionPass::kForward, true, 128, 8192);
  };
  CHECK(rate("b200") == Approx(529.0 * 2250 / 989.4 * 1e12).epsilon(1e-3));
  CHECK(rate("gb200") == Approx(529.0 * 2500 / 989.4 * 1e12).epsilon(1e-3));
  // FlashAttention-3 is Hopper-only: the Blackwell profiles have no tables for it.
  CHECK_FALSE(test::load_shipped_gpu("b200").has_attention(AttentionKernel::kFlash3));
}

TEST_CASE("shipped profiles name themselves and say where their numbers came from",
          "[hw][profile]") {
  for (const char* name :
       {"h100-sxm", "h200-sxm", "a100-sxm-80gb", "b200", "gb200", "b300", "gb300"}) {
    const auto root = load_json_file(test::shipped_profile_file(name));
    CHECK(root.at("name") == name);
    for (const char* key : {"source", "date", "hardware", "tool"}) {
      CHECK(root.at("provenance").contains(key));
    }
    // Every number of the gpu section has a citation in gpu.sources.
    const auto& gpu = root.at("gpu");
    const auto& sources = gpu.at("sources");
    for (const auto& [key, value] : gpu.items()) {
      if (key == "name" || key == "sources" || !value.is_number()) continue;
      CHECK(sources.contains(key));
    }
    CHECK(sources.contains("attention"));
    // The falloff cites its source in gpu.sources; a measured table carries its own.
    if (gpu.at("gemm").contains("size_falloff")) CHECK(sources.contains("gemm.size_falloff"));
    const nlohmann::json measured = gpu.at("gemm").value("measured", nlohmann::json::object());
    for (const auto& [dtype, table] : measured.items()) {
      const auto source = table.at("source").get<std::string>();
      CHECK((source.find("kernels.md") != std::string::npos ||
             source.find("blackwell.md") != std::string::npos ||
             source.find("calibration/measured/") != std::string::npos));
    }
  }
}

TEST_CASE("fp8 on an A100 profile fails naming the missing dtype", "[hw][profile]") {
  const GpuProfile a100 = test::load_shipped_gpu("a100-sxm-80gb");
  CHECK_THROWS_WITH(a100.peak_flops(Dtype::kFp8),
                    Contains("gpu.peak_tflops.fp8") && Contains("has no fp8"));
  CHECK_THROWS_AS(a100.gemm_best_fraction(Dtype::kFp8), InputError);
}

TEST_CASE("an unknown key in the gpu section is rejected naming its JSON path", "[hw][profile]") {
  auto gpu = shipped_section("h100-sxm");
  gpu["sm_count"] = 132;
  CHECK_THROWS_WITH(parse_section(gpu),
                    Contains("test.json: gpu.sm_count") && Contains("unknown key"));
  auto nested = shipped_section("h100-sxm");
  nested["gemm"]["tile_k"] = 64;
  CHECK_THROWS_WITH(parse_section(nested), Contains("gpu.gemm.tile_k"));
}

TEST_CASE("a profile whose best GEMM lacks a dtype of its peaks is rejected", "[hw][profile]") {
  auto gpu = shipped_section("h100-sxm");
  gpu["gemm"]["best_tflops"].erase("fp8");
  CHECK_THROWS_WITH(parse_section(gpu), Contains("gpu.gemm.best_tflops") && Contains("fp8"));
}

TEST_CASE("a measured GEMM faster than the peak is rejected", "[hw][profile]") {
  auto gpu = shipped_section("h100-sxm");
  gpu["gemm"]["best_tflops"]["bf16"] = 1000.0;
  CHECK_THROWS_WITH(parse_section(gpu), Contains("exceeds"));
}

TEST_CASE("a curve with unordered points is rejected at the offending entry", "[hw][profile]") {
  auto gpu = shipped_section("h100-sxm");
  gpu["hbm_efficiency"]["bytes"] = {1e6, 1e5, 1e7, 1e8};
  CHECK_THROWS_WITH(parse_section(gpu), Contains("gpu.hbm_efficiency.bytes[1]"));
  auto short_y = shipped_section("h100-sxm");
  short_y["hbm_efficiency"]["fraction"] = {0.5};
  CHECK_THROWS_WITH(parse_section(short_y), Contains("gpu.hbm_efficiency.fraction"));
}

TEST_CASE("a profile missing a causal backward attention table is rejected", "[hw][profile]") {
  auto gpu = shipped_section("a100-sxm-80gb");
  auto& tables = gpu["attention"]["backends"]["flash2"]["tables"];
  for (std::size_t i = tables.size(); i-- > 0;) {
    if (tables[i]["pass"] == "backward" && tables[i]["causal"] == true) tables.erase(i);
  }
  CHECK_THROWS_WITH(parse_section(gpu), Contains("gpu.attention.backends.flash2.tables") &&
                                            Contains("\"backward\" and causal true"));
}

TEST_CASE("a comm kernel may not hold every SM", "[hw][profile]") {
  auto gpu = shipped_section("h100-sxm");
  gpu["comm_kernel_sms"] = 132;
  CHECK_THROWS_WITH(parse_section(gpu), Contains("gpu.comm_kernel_sms"));
}

TEST_CASE("sources are documentation: any keys, string values only", "[hw][profile]") {
  auto gpu = shipped_section("h100-sxm");
  gpu["sources"]["anything.at.all"] = "a citation";
  CHECK_NOTHROW(parse_section(gpu));
  gpu["sources"]["sms"] = 132;
  CHECK_THROWS_WITH(parse_section(gpu), Contains("gpu.sources.sms"));
}

TEST_CASE("a grouped GEMM table is read like a dense one and rejected at its bad entry",
          "[hw][profile]") {
  // b200 ships one: 60 problem shapes of SimuMax's grouped measurements, bf16 only.
  const GpuProfile b200 = parse_section(shipped_section("b200"));
  REQUIRE(b200.gemm.grouped_table(Dtype::kBf16) != nullptr);
  CHECK(b200.gemm.grouped_table(Dtype::kBf16)->points().size() == 60);
  CHECK(b200.gemm.grouped_table(Dtype::kFp8) == nullptr);
  CHECK(parse_section(shipped_section("h100-sxm")).gemm.grouped_table(Dtype::kBf16) == nullptr);
  auto unknown = shipped_section("b200");
  unknown["gemm"]["grouped_measured"]["int8"] = unknown["gemm"]["grouped_measured"]["bf16"];
  CHECK_THROWS_WITH(parse_section(unknown), Contains("gpu.gemm.grouped_measured.int8"));
  auto empty = shipped_section("b200");
  empty["gemm"]["grouped_measured"]["bf16"]["points"] = nlohmann::json::array();
  CHECK_THROWS_WITH(parse_section(empty), Contains("gpu.gemm.grouped_measured.bf16.points"));
}
