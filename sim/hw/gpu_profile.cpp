#include "sim/hw/gpu_profile.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A LogCurve written as two parallel arrays of `object`, e.g. "bytes": [...], "fraction": [...].
// x must be > 0 and strictly increasing; y within [y_min, y_max], then multiplied by y_scale.
LogCurve read_curve(JsonObject& object, std::string_view x_key, std::string_view y_key,
                    double y_min, double y_max, double y_scale = 1.0) {
  const JsonNode x_node = object.at(x_key);
  const JsonNode y_node = object.at(y_key);
  const auto xs = x_node.as_array();
  const auto ys = y_node.as_array();
  if (xs.empty()) x_node.fail("must list at least one point");
  if (xs.size() != ys.size()) {
    y_node.fail("must have as many entries as " + std::string(x_key) + " (" +
                std::to_string(xs.size()) + ")");
  }
  std::vector<CurvePoint> points;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double x = xs[i].as_positive_number();
    if (!points.empty() && !(x > points.back().x)) xs[i].fail("must be larger than the one before");
    points.push_back({x, ys[i].as_number(y_min, y_max) * y_scale});
  }
  return LogCurve(std::move(points));
}

// A JSON object holding nothing but one curve.
LogCurve parse_curve(const JsonNode& node, std::string_view x_key, std::string_view y_key,
                     double y_min, double y_max) {
  JsonObject object(node);
  LogCurve curve = read_curve(object, x_key, y_key, y_min, y_max);
  object.finish();
  return curve;
}

// {"bf16": 989.4, "fp8": 1978.9, "fp4": ...}: TFLOP/s per dtype name, as FLOP/s.
std::map<Dtype, double> parse_tflops_by_dtype(const JsonNode& node) {
  JsonObject object(node);
  std::map<Dtype, double> flops;
  for (Dtype dtype : {Dtype::kBf16, Dtype::kFp8, Dtype::kFp4, Dtype::kFp32}) {
    if (auto value = object.find(dtype_name(dtype))) {
      flops[dtype] = value->as_positive_number() * kTera;
    }
  }
  object.finish();  // rejects dtype names other than bf16, fp8, fp4, fp32
  if (flops.empty()) node.fail("must give at least one dtype (bf16, fp8, fp4, fp32)");
  return flops;
}

std::map<Dtype, DtypeCompute> parse_compute(JsonObject& gpu, JsonObject& gemm) {
  const auto peak = parse_tflops_by_dtype(gpu.at("peak_tflops"));
  const JsonNode best_node = gemm.at("best_tflops");
  const auto best = parse_tflops_by_dtype(best_node);
  std::map<Dtype, DtypeCompute> compute;
  for (const auto& [dtype, peak_flops] : peak) {
    const auto found = best.find(dtype);
    if (found == best.end()) {
      best_node.fail("lacks " + std::string(dtype_name(dtype)) +
                     ", which peak_tflops lists: every dtype needs its measured best GEMM");
    }
    if (found->second > peak_flops) {
      best_node.fail(std::string(dtype_name(dtype)) + " exceeds the dtype's peak_tflops");
    }
    compute[dtype] = {peak_flops, found->second};
  }
  if (best.size() != peak.size()) best_node.fail("lists a dtype that peak_tflops lacks");
  return compute;
}

// {"source": "...", "points": [{"m": 4096, "n": 4096, "k": 4096, "tflops": 783.3}, ...]}
GemmTable parse_gemm_table(const JsonNode& node, double best_flops) {
  JsonObject object(node);
  std::string source = object.string("source");
  const JsonNode points_node = object.at("points");
  object.finish();
  std::vector<MeasuredGemm> points;
  for (const JsonNode& item : points_node.as_array()) {
    JsonObject point(item);
    const auto dim = [&](std::string_view key) {
      return static_cast<double>(point.integer(key, 1, std::int64_t{1} << 40));
    };
    const MeasuredGemm p{dim("m"), dim("n"), dim("k"), point.positive("tflops") * kTera};
    point.finish();
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (points[i].m == p.m && points[i].n == p.n && points[i].k == p.k) {
        item.fail("repeats the m, n and k of points[" + std::to_string(i) + "]");
      }
    }
    points.push_back(p);
  }
  if (points.empty()) points_node.fail("must list at least one point");
  return GemmTable(std::move(points), best_flops, std::move(source));
}

std::map<Dtype, GemmTable> parse_measured(const JsonNode& node,
                                          const std::map<Dtype, DtypeCompute>& compute) {
  JsonObject object(node);
  std::map<Dtype, GemmTable> tables;
  for (const auto& [dtype, c] : compute) {
    if (auto table = object.find(dtype_name(dtype))) {
      tables[dtype] = parse_gemm_table(*table, c.gemm_best_flops);
    }
  }
  object.finish();  // rejects dtypes the profile has no peak for
  return tables;
}

GemmEfficiency parse_gemm(JsonObject& gemm, const std::map<Dtype, DtypeCompute>& compute) {
  GemmEfficiency out;
  out.tile_m = static_cast<int>(gemm.integer("tile_m", 1, 4096));
  out.tile_n = static_cast<int>(gemm.integer("tile_n", 1, 4096));
  if (auto measured = gemm.find("measured")) out.measured = parse_measured(*measured, compute);
  if (auto grouped = gemm.find("grouped_measured")) {
    out.grouped_measured = parse_measured(*grouped, compute);
  }
  if (out.measured.size() < compute.size()) {
    if (!gemm.has("size_falloff")) {
      const auto without = std::find_if(compute.begin(), compute.end(), [&](const auto& c) {
        return out.measured.count(c.first) == 0;
      });
      throw InputError(gemm.node().file(), gemm.node().path() + ".size_falloff", "",
                       "is required: " + std::string(dtype_name(without->first)) +
                           " has no table in gemm.measured");
    }
    out.size_falloff = parse_curve(gemm.at("size_falloff"), "flops", "relative", 1e-6, 1.0);
  } else if (auto falloff = gemm.find("size_falloff")) {
    falloff->fail("is not used: every dtype has a table in gpu.gemm.measured");
  }
  return out;
}

AttentionTable parse_attention_table(const JsonNode& node) {
  JsonObject object(node);
  AttentionTable table{};
  table.pass = object.choice("pass", {"forward", "backward"}) == "forward"
                   ? AttentionPass::kForward
                   : AttentionPass::kBackward;
  table.causal = object.boolean("causal");
  table.head_dim = static_cast<double>(object.integer("head_dim", 1, 4096));
  table.achieved_flops_by_seq = read_curve(object, "seq_len", "tflops", 1e-6, 1e6, kTera);
  object.finish();
  return table;
}

AttentionTables parse_attention_kernel(const JsonNode& node) {
  JsonObject object(node);
  const std::string kernel = object.string("kernel");
  const JsonNode tables_node = object.at("tables");
  object.finish();
  std::vector<AttentionTable> tables;
  for (const auto& item : tables_node.as_array()) {
    tables.push_back(parse_attention_table(item));
    for (std::size_t i = 0; i + 1 < tables.size(); ++i) {
      const auto& a = tables[i];
      const auto& b = tables.back();
      if (a.pass == b.pass && a.causal == b.causal && a.head_dim == b.head_dim) {
        item.fail("repeats the pass, causal and head_dim of tables[" + std::to_string(i) + "]");
      }
    }
  }
  for (auto pass : {AttentionPass::kForward, AttentionPass::kBackward}) {
    for (bool causal : {false, true}) {
      const bool present = std::any_of(tables.begin(), tables.end(), [&](const auto& t) {
        return t.pass == pass && t.causal == causal;
      });
      if (!present) {
        tables_node.fail("needs a table with pass \"" + std::string(attention_pass_name(pass)) +
                         "\" and causal " + (causal ? "true" : "false"));
      }
    }
  }
  return AttentionTables(kernel, std::move(tables));
}

// {"backends": {"cudnn": {...}, "flash3": {...}}}: one set of tables per measured kernel.
std::map<AttentionKernel, AttentionTables> parse_attention(const JsonNode& node) {
  JsonObject object(node);
  const JsonNode backends_node = object.at("backends");
  object.finish();
  JsonObject backends(backends_node);
  std::map<AttentionKernel, AttentionTables> kernels;
  for (AttentionKernel kernel : kAttentionKernels) {
    if (auto tables = backends.find(attention_kernel_name(kernel))) {
      kernels.emplace(kernel, parse_attention_kernel(*tables));
    }
  }
  backends.finish();  // rejects names other than cudnn, flash2, flash3
  if (kernels.empty()) backends_node.fail("must give at least one of cudnn, flash2, flash3");
  return kernels;
}

// 9.0 -> 90: major and one decimal of minor, as CUDA numbers its architectures.
int parse_compute_capability(const JsonNode& node) {
  const double value = node.as_number(1.0, 99.9);
  const double tenths = std::round(value * 10.0);
  if (std::abs(tenths - value * 10.0) > 1e-9) node.fail("must be major.minor, e.g. 9.0");
  return static_cast<int>(tenths);
}

// `sources` documents where each number came from; it must be an object of strings and is
// otherwise ignored.
void check_sources(const JsonNode& node) {
  JsonObject object(node);
  for (const auto& [key, value] : node.json().items()) object.at(key).as_string();
  object.finish();
}

}  // namespace

const DtypeCompute& GpuProfile::compute_of(Dtype dtype) const {
  const auto found = compute.find(dtype);
  if (found == compute.end()) {
    std::string listed;
    for (const auto& [known, unused] : compute) {
      listed += (listed.empty() ? "" : ", ") + std::string(dtype_name(known));
    }
    const std::string prefix = json_path.empty() ? "" : json_path + ".";
    throw InputError(source_file, prefix + "peak_tflops." + std::string(dtype_name(dtype)), "",
                     "is missing: " + name + " has no " + std::string(dtype_name(dtype)) +
                         " compute (dtypes this profile gives: " + listed + ")");
  }
  return found->second;
}

std::string GpuProfile::attention_kernel_list() const {
  std::string listed;
  for (const auto& [kernel, unused] : attention) {
    listed += (listed.empty() ? "" : ", ") + std::string(attention_kernel_name(kernel));
  }
  return listed;
}

const AttentionTables& GpuProfile::attention_tables(AttentionKernel kernel) const {
  const auto found = attention.find(kernel);
  if (found == attention.end()) {
    const std::string prefix = json_path.empty() ? "" : json_path + ".";
    throw InputError(
        source_file, prefix + "attention.backends." + std::string(attention_kernel_name(kernel)),
        "",
        "is missing: " + name + " has no " + std::string(attention_kernel_name(kernel)) +
            " attention tables (backends this profile has: " + attention_kernel_list() + ")");
  }
  return found->second;
}

double GpuProfile::peak_flops(Dtype dtype) const {
  return compute_of(dtype).peak_flops;
}

double GpuProfile::gemm_best_fraction(Dtype dtype) const {
  const DtypeCompute& c = compute_of(dtype);
  return c.gemm_best_flops / c.peak_flops;
}

GpuProfile parse_gpu_profile(const JsonNode& gpu_section) {
  JsonObject gpu(gpu_section);
  GpuProfile profile;
  profile.source_file = gpu_section.file();
  profile.json_path = gpu_section.path() == "$" ? "" : gpu_section.path();
  profile.name = gpu.string("name");
  profile.sms = static_cast<int>(gpu.integer("sms", 1, 100000));
  profile.compute_capability = parse_compute_capability(gpu.at("compute_capability"));
  profile.hbm_bytes = gpu.positive("hbm_GiB") * kGiB;
  profile.hbm_bandwidth_Bps = gpu.positive("hbm_bandwidth_TBps") * kTera;
  JsonObject gemm(gpu.at("gemm"));
  profile.compute = parse_compute(gpu, gemm);
  profile.gemm = parse_gemm(gemm, profile.compute);
  gemm.finish();
  profile.attention = parse_attention(gpu.at("attention"));
  profile.hbm_efficiency = parse_curve(gpu.at("hbm_efficiency"), "bytes", "fraction", 1e-6, 1.0);
  profile.kernel_launch_overhead = Time::from_us(gpu.number("kernel_launch_overhead_us", 0, 1e6));
  const JsonNode comm_sms = gpu.at("comm_kernel_sms");
  profile.comm_kernel_sms = static_cast<int>(comm_sms.as_integer(0, 100000));
  if (profile.comm_kernel_sms >= profile.sms) {
    comm_sms.fail("must be less than sms (" + std::to_string(profile.sms) + ")");
  }
  if (auto sources = gpu.find("sources")) check_sources(*sources);
  gpu.finish();
  return profile;
}

}  // namespace wallsim
