#include "calibration/raw/raw_data.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "sim/core/json_reader.hpp"

namespace wallsim {
namespace {

constexpr const char* kKindNames[] = {"gemm", "attention", "memory", "collective"};
constexpr const char* kMemoryNames[] = {"copy", "elementwise", "empty"};

GemmPoint read_gemm(JsonObject& point) {
  GemmPoint out;
  out.shape.m = point.integer("m", 1);
  out.shape.n = point.integer("n", 1);
  out.shape.k = point.integer("k", 1);
  out.shape.batch = point.integer_or("batch", 1, 1);
  out.dtype = *dtype_from_name(point.choice("dtype", {"bf16", "fp8", "fp32"}));
  out.time_s = point.positive("time_s");
  return out;
}

AttentionPoint read_attention(JsonObject& point) {
  AttentionPoint out;
  AttentionShape& s = out.shape;
  s.batch = point.integer("batch", 1);
  s.heads = point.integer("heads", 1);
  s.kv_heads = point.integer("kv_heads", 1);
  if (s.heads % s.kv_heads != 0) point.at("kv_heads").fail("must divide heads");
  s.seq_q = point.integer("seq_q", 1);
  s.seq_kv = point.integer("seq_kv", 1);
  s.head_dim = point.integer("head_dim", 1, 4096);
  s.causal = point.boolean("causal");
  out.pass = point.choice("pass", {"forward", "backward"}) == "forward" ? AttentionPass::kForward
                                                                        : AttentionPass::kBackward;
  out.time_s = point.positive("time_s");
  return out;
}

MemoryPoint read_memory(JsonObject& point) {
  MemoryPoint out;
  const std::string kernel = point.choice("kind", {"copy", "elementwise", "empty"});
  out.kernel = kernel == "copy"          ? MemoryKernel::kCopy
               : kernel == "elementwise" ? MemoryKernel::kElementwise
                                         : MemoryKernel::kEmpty;
  out.bytes = point.number("bytes", 0);
  if ((out.kernel == MemoryKernel::kEmpty) != (out.bytes == 0)) {
    point.at("bytes").fail("must be 0 exactly when kind is \"empty\"");
  }
  out.time_s = point.positive("time_s");
  point.find("name");  // which kernel (copy, rmsnorm, ...): for humans
  return out;
}

// algbw and busbw are optional; when present they must agree with time_s (1%), so a file
// whose columns were swapped or mis-scaled is caught.
void check_bandwidths(JsonObject& point, const CollectivePoint& c) {
  const double algbw = c.bytes / c.time_s / 1e9;
  const double busbw = algbw * bus_bandwidth_factor(c.op, c.ranks);
  for (auto [key, expected] : {std::pair{"algbw_GBps", algbw}, std::pair{"busbw_GBps", busbw}}) {
    if (auto node = point.find(key)) {
      const double value = node->as_number(0);
      if (std::abs(value - expected) > 0.01 * expected) {
        node->fail("disagrees with bytes / time_s (expected " + std::to_string(expected) + ")");
      }
    }
  }
}

template <typename T>
T named(const JsonNode& node, std::optional<T> value, const std::string& allowed) {
  if (!value) node.fail("must be one of: " + allowed);
  return *value;
}

CollectivePoint read_collective(JsonObject& point) {
  CollectivePoint out;
  const JsonNode op = point.at("op");
  out.op = named(op, parse_op(op.as_string()), op_names());
  out.ranks = static_cast<int>(point.integer("ranks", 2, 1 << 20));
  out.nodes = static_cast<int>(point.integer("nodes", 1, out.ranks));
  out.bytes = point.positive("bytes");
  const JsonNode algorithm = point.at("algorithm");
  out.algorithm = named(algorithm, parse_algorithm(algorithm.as_string()), algorithm_names());
  const JsonNode protocol = point.at("protocol");
  out.protocol = named(protocol, parse_protocol(protocol.as_string()), protocol_names());
  out.time_s = point.positive("time_s");
  check_bandwidths(point, out);
  return out;
}

void read_points(const JsonNode& points, RawFile& raw) {
  for (const JsonNode& item : points.as_array()) {
    JsonObject point(item);
    switch (raw.kind) {
      case RawKind::kGemm:
        raw.gemm.push_back(read_gemm(point));
        break;
      case RawKind::kAttention:
        raw.attention.push_back(read_attention(point));
        break;
      case RawKind::kMemory:
        raw.memory.push_back(read_memory(point));
        break;
      case RawKind::kCollective:
        raw.collective.push_back(read_collective(point));
        break;
    }
    point.finish();
  }
  if (raw.size() == 0) points.fail("must list at least one measured point");
}

std::map<std::string, std::string> read_hardware(const JsonNode& node) {
  JsonObject hardware(node);
  std::map<std::string, std::string> out;
  out["gpu"] = hardware.string("gpu");
  for (const auto& [key, unused] : node.json().items()) {
    if (key != "gpu") out[key] = hardware.at(key).as_string();
  }
  hardware.finish();
  return out;
}

}  // namespace

const char* raw_kind_name(RawKind kind) {
  return kKindNames[static_cast<int>(kind)];
}
const char* memory_kernel_name(MemoryKernel kernel) {
  return kMemoryNames[static_cast<int>(kernel)];
}

std::size_t RawFile::size() const {
  return gemm.size() + attention.size() + memory.size() + collective.size();
}

RawFile parse_raw_file(const nlohmann::json& document, const std::string& where) {
  JsonObject root(JsonNode(document, where, ""));
  RawFile raw;
  raw.file = where;
  raw.tool = root.string("tool");
  raw.version = root.string("version");
  raw.date = root.string("date");
  raw.hardware = read_hardware(root.at("hardware"));
  const std::string kind = root.choice("kind", {"gemm", "attention", "memory", "collective"});
  for (int k = 0; k < 4; ++k) {
    if (kind == kKindNames[k]) raw.kind = static_cast<RawKind>(k);
  }
  root.find("notes");  // free text for humans
  read_points(root.at("points"), raw);
  root.finish();
  return raw;
}

RawFile load_raw_file(const std::string& path) {
  return parse_raw_file(load_json_file(path), path);
}

namespace {

nlohmann::json point_json(const GemmPoint& p) {
  return {{"m", p.shape.m},
          {"n", p.shape.n},
          {"k", p.shape.k},
          {"batch", p.shape.batch},
          {"dtype", dtype_name(p.dtype)},
          {"time_s", p.time_s}};
}

nlohmann::json point_json(const AttentionPoint& p) {
  const AttentionShape& s = p.shape;
  return {{"batch", s.batch},       {"heads", s.heads},
          {"kv_heads", s.kv_heads}, {"seq_q", s.seq_q},
          {"seq_kv", s.seq_kv},     {"head_dim", s.head_dim},
          {"causal", s.causal},     {"pass", attention_pass_name(p.pass)},
          {"time_s", p.time_s}};
}

nlohmann::json point_json(const MemoryPoint& p) {
  return {{"kind", memory_kernel_name(p.kernel)}, {"bytes", p.bytes}, {"time_s", p.time_s}};
}

nlohmann::json point_json(const CollectivePoint& p) {
  const double algbw = p.bytes / p.time_s / 1e9;
  return {{"op", op_name(p.op)},
          {"ranks", p.ranks},
          {"nodes", p.nodes},
          {"bytes", p.bytes},
          {"algorithm", algorithm_name(p.algorithm)},
          {"protocol", protocol_name(p.protocol)},
          {"time_s", p.time_s},
          {"algbw_GBps", algbw},
          {"busbw_GBps", algbw * bus_bandwidth_factor(p.op, p.ranks)}};
}

template <typename Points>
void append_points(nlohmann::json& out, const Points& points) {
  for (const auto& point : points) out.push_back(point_json(point));
}

}  // namespace

nlohmann::json raw_file_to_json(const RawFile& raw) {
  nlohmann::json points = nlohmann::json::array();
  append_points(points, raw.gemm);
  append_points(points, raw.attention);
  append_points(points, raw.memory);
  append_points(points, raw.collective);
  return {{"tool", raw.tool},         {"version", raw.version},          {"date", raw.date},
          {"hardware", raw.hardware}, {"kind", raw_kind_name(raw.kind)}, {"points", points}};
}

std::string raw_document_text(const nlohmann::json& document) {
  std::string text = "{\n";
  bool first = true;
  for (const auto& [key, value] : document.items()) {
    text += first ? "" : ",\n";
    first = false;
    text += "  " + nlohmann::json(key).dump() + ": ";
    if (key != "points") {
      text += value.dump();
      continue;
    }
    text += "[\n";
    for (std::size_t i = 0; i < value.size(); ++i) {
      text += "    " + value[i].dump() + (i + 1 < value.size() ? ",\n" : "\n");
    }
    text += "  ]";
  }
  return text + "\n}\n";
}

}  // namespace wallsim
