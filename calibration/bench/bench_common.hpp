// Shared pieces of the calibration benches: error checks, a tiny JSON writer (the benches
// depend on the CUDA libraries alone, no JSON package), timing by CUDA events, the hardware
// block every raw file carries, and command-line flags. calibration/README.md documents the
// raw format these programs write.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#define BENCH_CHECK_CUDA(call)                                           \
  do {                                                                   \
    cudaError_t status_ = (call);                                        \
    if (status_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(status_));                         \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

namespace bench {

// Minimal JSON output: objects of string / number / bool members, arrays of such objects.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value) {
    return raw(key, quote(value));
  }
  JsonObject& add(const std::string& key, const char* value) {
    return add(key, std::string(value));
  }
  JsonObject& add(const std::string& key, double value) {
    char text[64];
    std::snprintf(text, sizeof text, "%.9g", value);
    return raw(key, text);
  }
  JsonObject& add(const std::string& key, long long value) {
    return raw(key, std::to_string(value));
  }
  JsonObject& add(const std::string& key, int value) { return raw(key, std::to_string(value)); }
  JsonObject& add(const std::string& key, bool value) { return raw(key, value ? "true" : "false"); }
  JsonObject& raw(const std::string& key, const std::string& json) {
    text_ += (text_.empty() ? "" : ", ") + quote(key) + ": " + json;
    return *this;
  }
  std::string str() const { return "{" + text_ + "}"; }

  static std::string quote(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (static_cast<unsigned char>(c) >= 0x20) out += c;
    }
    return out + "\"";
  }

 private:
  std::string text_;
};

inline std::string today() {
  const std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

inline std::string version_text(int version) {  // CUDA style: 13000 -> "13.0"
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// {"gpu", "driver", "cuda", plus the bench's library versions}.
inline JsonObject hardware(int device,
                           const std::vector<std::pair<std::string, std::string>>& libs) {
  cudaDeviceProp prop{};
  BENCH_CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  int driver = 0, runtime = 0;
  BENCH_CHECK_CUDA(cudaDriverGetVersion(&driver));
  BENCH_CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
  JsonObject out;
  out.add("gpu", prop.name).add("sms", std::to_string(prop.multiProcessorCount));
  out.add("driver", "CUDA driver API " + version_text(driver)).add("cuda", version_text(runtime));
  for (const auto& [name, version] : libs) out.add(name, version);
  return out;
}

// Writes {"tool", "version", "date", "hardware", "kind", "points"} to `path`.
inline void write_raw(const std::string& path, const std::string& tool, const JsonObject& hw,
                      const std::string& kind, const std::vector<JsonObject>& points) {
  std::ofstream out(path);
  out << "{\n  \"tool\": " << JsonObject::quote(tool) << ",\n  \"version\": \"0.1.0\",\n"
      << "  \"date\": " << JsonObject::quote(today()) << ",\n  \"hardware\": " << hw.str()
      << ",\n  \"kind\": " << JsonObject::quote(kind) << ",\n  \"points\": [\n";
  for (std::size_t i = 0; i < points.size(); ++i) {
    out << "    " << points[i].str() << (i + 1 < points.size() ? ",\n" : "\n");
  }
  out << "  ]\n}\n";
  std::printf("%s: %zu points\n", path.c_str(), points.size());
}

// Median over `reps` timed runs of `launch` (after `warmup` untimed runs), in seconds per call;
// each timed run issues `inner` calls back to back between two events.
template <typename Launch>
double median_time_s(Launch launch, int warmup = 3, int reps = 10, int inner = 1,
                     cudaStream_t stream = nullptr) {
  for (int i = 0; i < warmup; ++i) launch();
  cudaEvent_t start, stop;
  BENCH_CHECK_CUDA(cudaEventCreate(&start));
  BENCH_CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    BENCH_CHECK_CUDA(cudaEventRecord(start, stream));
    for (int i = 0; i < inner; ++i) launch();
    BENCH_CHECK_CUDA(cudaEventRecord(stop, stream));
    BENCH_CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1e-3 / inner);
  }
  BENCH_CHECK_CUDA(cudaEventDestroy(start));
  BENCH_CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// The stream graph timings capture on (capture needs a stream other than the legacy default).
inline cudaStream_t bench_stream() {
  static const cudaStream_t stream = [] {
    cudaStream_t s;
    BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }();
  return stream;
}

// Seconds per call of `launch` (which issues its work on `stream`) replayed from a CUDA graph
// of `inner` back-to-back calls: the median of `reps` timed replays after `warmup` eager calls
// and one untimed replay. A point is then the device's time per call plus the device-side gap
// between kernels, free of the host's launch rate: issued eagerly from a slow host, small
// kernels time the CPU (the profile's `host` section models that cost, not the GPU's tables).
template <typename Launch>
double median_graph_time_s(Launch launch, cudaStream_t stream, int warmup = 3, int reps = 10,
                           int inner = 20) {
  for (int i = 0; i < warmup; ++i) launch();
  BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph;
  BENCH_CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < inner; ++i) launch();
  BENCH_CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  BENCH_CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  BENCH_CHECK_CUDA(cudaGraphLaunch(exec, stream));
  BENCH_CHECK_CUDA(cudaStreamSynchronize(stream));
  const double replay_s =
      median_time_s([&] { BENCH_CHECK_CUDA(cudaGraphLaunch(exec, stream)); }, 0, reps, 1, stream);
  BENCH_CHECK_CUDA(cudaGraphExecDestroy(exec));
  BENCH_CHECK_CUDA(cudaGraphDestroy(graph));
  return replay_s / inner;
}

// --out FILE (default <tool>.raw.json), --quick (fewer points, for a smoke run) and
// --max-seconds S (stop sweeping once S seconds have passed and write the points so far).
struct Flags {
  std::string out;
  bool quick = false;
  double max_seconds = 0;  // 0: no limit
  std::string shapes;      // gemm_bench: extra shapes file
};

[[noreturn]] inline void usage(const std::string& tool) {
  std::fprintf(stderr, "usage: %s [--out FILE] [--quick] [--max-seconds S]%s\n", tool.c_str(),
               tool == "gemm_bench" ? " [--shapes FILE]" : "");
  std::exit(2);
}

inline Flags parse_flags(int argc, char** argv, const std::string& tool) {
  Flags flags;
  flags.out = tool + ".raw.json";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--out" && has_value) {
      flags.out = argv[++i];
    } else if (arg == "--quick") {
      flags.quick = true;
    } else if (arg == "--max-seconds" && has_value) {
      char* end = nullptr;
      flags.max_seconds = std::strtod(argv[++i], &end);
      if (*end != '\0' || !(flags.max_seconds > 0)) usage(tool);
    } else if (arg == "--shapes" && has_value && tool == "gemm_bench") {
      flags.shapes = argv[++i];
    } else {
      usage(tool);
    }
  }
  return flags;
}

// The wall-clock budget of a sweep (--max-seconds): a bench checks it before each point or
// series and, once it is spent, stops and writes what it has (a bounded calibration run).
class Budget {
 public:
  explicit Budget(double seconds) : seconds_(seconds), start_(std::chrono::steady_clock::now()) {}
  bool spent() const {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
    return seconds_ > 0 && elapsed.count() >= seconds_;
  }

 private:
  double seconds_;
  std::chrono::steady_clock::time_point start_;
};

// Prints, once, that the budget cut the sweep short.
inline bool stop_for_budget(const Budget& budget, const std::string& tool, std::size_t points) {
  if (!budget.spent()) return false;
  std::fprintf(stderr, "%s: --max-seconds spent, sweep stopped after %zu points\n", tool.c_str(),
               points);
  return true;
}

}  // namespace bench
