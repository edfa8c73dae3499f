// Raw microbenchmark results: what calibration/bench/* write and `wallsim calibrate` reads.
//
// One file per bench run: {"tool", "version", "date", "hardware": {...}, "kind", "points": [...]}
// with `kind` one of gemm | attention | memory | collective and every point a measured median
// time in seconds (calibration/README.md documents each field). Parsing rejects unknown keys
// and names the file and JSON path of every problem.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "sim/hw/attention_tables.hpp"
#include "sim/hw/dtype.hpp"
#include "sim/hw/kernel_flops.hpp"
#include "sim/network/collective/collective.hpp"

namespace wallsim {

enum class RawKind { kGemm, kAttention, kMemory, kCollective };
const char* raw_kind_name(RawKind kind);

struct GemmPoint {
  GemmShape shape;
  Dtype dtype = Dtype::kBf16;
  double time_s = 0;
};

struct AttentionPoint {
  AttentionShape shape;
  AttentionPass pass = AttentionPass::kForward;
  double time_s = 0;
};

// A copy or elementwise kernel streaming `bytes` (reads plus writes); an empty kernel
// (bytes 0) measures the launch gap alone.
enum class MemoryKernel { kCopy, kElementwise, kEmpty };
const char* memory_kernel_name(MemoryKernel kernel);

struct MemoryPoint {
  MemoryKernel kernel = MemoryKernel::kCopy;
  double bytes = 0;
  double time_s = 0;
};

// One nccl-tests style measurement; bytes is nccl-tests' S. algbw/busbw are what the bench
// printed (redundant with time_s; parsing checks they agree).
struct CollectivePoint {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int ranks = 0;
  int nodes = 0;
  double bytes = 0;
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  double time_s = 0;
};

struct RawFile {
  std::string file;  // where it was read from ("" when built in memory)
  std::string tool;
  std::string version;
  std::string date;
  std::map<std::string, std::string> hardware;  // gpu, driver, cuda, cublas/cudnn/nccl, ...
  RawKind kind = RawKind::kGemm;
  std::vector<GemmPoint> gemm;
  std::vector<AttentionPoint> attention;
  std::vector<MemoryPoint> memory;
  std::vector<CollectivePoint> collective;

  std::size_t size() const;
};

// Parses a raw document; `where` names it in errors. InputError on anything malformed.
RawFile parse_raw_file(const nlohmann::json& document, const std::string& where);
RawFile load_raw_file(const std::string& path);

// The document parse_raw_file reads back (used by the synthetic-data tool and tests).
nlohmann::json raw_file_to_json(const RawFile& raw);

// A raw document as text: top-level keys one per line, each point on one line (diffable).
std::string raw_document_text(const nlohmann::json& document);

}  // namespace wallsim
