#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibration/raw/raw_data.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;
using Catch::Matchers::Contains;

namespace {

nlohmann::json gemm_document() {
  return nlohmann::json::parse(R"({
    "tool": "gemm_bench", "version": "0.1.0", "date": "2026-11-29",
    "hardware": {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580.1", "cuda": "13.0", "cublas": "13.0.1"},
    "kind": "gemm",
    "points": [{"m": 4096, "n": 4096, "k": 4096, "batch": 1, "dtype": "bf16", "time_s": 2e-4}]
  })");
}

nlohmann::json collective_document() {
  // 1 GiB all-reduce on 8 ranks in 5 ms: algbw = 2^30 / 5e-3 / 1e9 = 214.75 GB/s, busbw =
  // algbw · 2·7/8 = 375.8 GB/s.
  return nlohmann::json::parse(R"({
    "tool": "nccl_bench", "version": "0.1.0", "date": "2026-11-29",
    "hardware": {"gpu": "H100", "nccl": "2.27.7"}, "kind": "collective",
    "points": [{"op": "all_reduce", "ranks": 8, "nodes": 1, "bytes": 1073741824,
                "algorithm": "ring", "protocol": "simple", "time_s": 5e-3,
                "algbw_GBps": 214.748, "busbw_GBps": 375.809}]
  })");
}

}  // namespace

TEST_CASE("a raw gemm file parses into typed points") {
  const RawFile raw = parse_raw_file(gemm_document(), "g.raw.json");
  CHECK(raw.kind == RawKind::kGemm);
  REQUIRE(raw.gemm.size() == 1);
  CHECK(raw.gemm[0].shape.m == 4096);
  CHECK(raw.gemm[0].dtype == Dtype::kBf16);
  CHECK(raw.hardware.at("cublas") == "13.0.1");
}

TEST_CASE("a raw file round-trips through raw_file_to_json") {
  const RawFile raw = parse_raw_file(collective_document(), "c.raw.json");
  const RawFile again = parse_raw_file(raw_file_to_json(raw), "again");
  REQUIRE(again.collective.size() == 1);
  CHECK(again.collective[0].time_s == raw.collective[0].time_s);
  CHECK(again.collective[0].protocol == Protocol::kSimple);
  CHECK(parse_raw_file(nlohmann::json::parse(raw_document_text(raw_file_to_json(raw))), "text")
            .collective[0]
            .bytes == 1073741824.0);
}

TEST_CASE("raw parsing rejects unknown keys and names file and path") {
  auto doc = gemm_document();
  doc["points"][0]["flops"] = 1;
  CHECK_THROWS_WITH(parse_raw_file(doc, "g.raw.json"),
                    Contains("g.raw.json") && Contains("points[0]") && Contains("flops"));
}

TEST_CASE("raw parsing rejects a busbw that disagrees with bytes and time") {
  auto doc = collective_document();
  doc["points"][0]["busbw_GBps"] = 214.748;  // the algbw copied into the busbw column
  CHECK_THROWS_WITH(parse_raw_file(doc, "c.raw.json"),
                    Contains("points[0].busbw_GBps") && Contains("disagrees"));
}

TEST_CASE("raw parsing rejects empty point lists, unknown kinds and bad names") {
  auto empty = gemm_document();
  empty["points"] = nlohmann::json::array();
  CHECK_THROWS_WITH(parse_raw_file(empty, "e"), Contains("at least one"));
  auto kind = gemm_document();
  kind["kind"] = "flops";
  CHECK_THROWS_WITH(parse_raw_file(kind, "k"), Contains("kind"));
  auto op = collective_document();
  op["points"][0]["op"] = "all_reduction";
  CHECK_THROWS_WITH(parse_raw_file(op, "o"), Contains("all_reduce, all_gather"));
}

TEST_CASE("memory points have zero bytes exactly when the kernel is empty") {
  auto doc = nlohmann::json::parse(R"({"tool": "mem_bench", "version": "1", "date": "d",
    "hardware": {"gpu": "g"}, "kind": "memory",
    "points": [{"kind": "copy", "bytes": 0, "time_s": 1e-6}]})");
  CHECK_THROWS_WITH(parse_raw_file(doc, "m"), Contains("points[0].bytes"));
  doc["points"][0]["kind"] = "empty";
  CHECK(parse_raw_file(doc, "m").memory[0].kernel == MemoryKernel::kEmpty);
}
