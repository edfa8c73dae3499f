// nccl_bench: NCCL collectives and send/recv on the local GPUs (one process, ncclCommInitAll),
// nccl-tests style: S as nccl-tests counts it, float32, algbw = S/t and busbw = algbw · factor
// (all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; send/recv 1).
// Every (algorithm, protocol) is forced through NCCL_ALGO / NCCL_PROTO on a fresh communicator,
// for groups of 2, 4, ... local GPUs. Needs at least 2 GPUs; multi-node runs are not covered
// by this single-process program. Writes raw JSON "collective".
#include <nccl.h>

#include "bench_common.hpp"

namespace {

struct Series {
  const char* op;         // wallsim name
  const char* algorithm;  // wallsim name
  const char* nccl_algo;  // NCCL_ALGO value, "" for p2p
  const char* protocol;   // wallsim name
  const char* nccl_proto;
};

const Series kSeries[] = {
    {"all_reduce", "ring", "Ring", "ll", "LL"},
    {"all_reduce", "ring", "Ring", "ll128", "LL128"},
    {"all_reduce", "ring", "Ring", "simple", "Simple"},
    {"all_reduce", "nvls", "NVLS", "simple", "Simple"},
    {"all_gather", "ring", "Ring", "ll", "LL"},
    {"all_gather", "ring", "Ring", "ll128", "LL128"},
    {"all_gather", "ring", "Ring", "simple", "Simple"},
    {"reduce_scatter", "ring", "Ring", "ll", "LL"},
    {"reduce_scatter", "ring", "Ring", "ll128", "LL128"},
    {"reduce_scatter", "ring", "Ring", "simple", "Simple"},
    {"send_recv", "p2p", "", "simple", "Simple"},
    {"all_to_all", "pairwise", "", "simple", "Simple"},
};

struct Group {
  int n;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> send, recv;
};

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "send_recv") return 1.0;
  return (n - 1.0) / n;
}

// Enqueues one collective of nccl-tests size `bytes` on every rank.
ncclResult_t launch(const std::string& op, Group& g, size_t bytes) {
  const size_t count = bytes / sizeof(float);
  ncclGroupStart();
  for (int r = 0; r < g.n; ++r) {
    ncclComm_t c = g.comms[r];
    cudaStream_t s = g.streams[r];
    if (op == "all_reduce") ncclAllReduce(g.send[r], g.recv[r], count, ncclFloat, ncclSum, c, s);
    if (op == "all_gather") ncclAllGather(g.send[r], g.recv[r], count / g.n, ncclFloat, c, s);
    if (op == "reduce_scatter")
      ncclReduceScatter(g.send[r], g.recv[r], count / g.n, ncclFloat, ncclSum, c, s);
    if (op == "send_recv") {
      ncclSend(g.send[r], count, ncclFloat, (r + 1) % g.n, c, s);
      ncclRecv(g.recv[r], count, ncclFloat, (r + g.n - 1) % g.n, c, s);
    }
    if (op == "all_to_all") {
      for (int peer = 0; peer < g.n; ++peer) {
        ncclSend(g.send[r] + peer * (count / g.n), count / g.n, ncclFloat, peer, c, s);
        ncclRecv(g.recv[r] + peer * (count / g.n), count / g.n, ncclFloat, peer, c, s);
      }
    }
  }
  return ncclGroupEnd();
}

// Median over 10 runs (after 3 warm-ups) of 5 back-to-back calls; the slowest rank counts.
double time_op(const std::string& op, Group& g, size_t bytes, bool& failed) {
  std::vector<double> runs;
  std::vector<cudaEvent_t> start(g.n), stop(g.n);
  for (int r = 0; r < g.n; ++r) {
    BENCH_CHECK_CUDA(cudaSetDevice(r));
    BENCH_CHECK_CUDA(cudaEventCreate(&start[r]));
    BENCH_CHECK_CUDA(cudaEventCreate(&stop[r]));
  }
  for (int i = 0; i < 13 && !failed; ++i) {
    for (int r = 0; r < g.n; ++r) BENCH_CHECK_CUDA(cudaEventRecord(start[r], g.streams[r]));
    for (int j = 0; j < 5 && !failed; ++j) failed = launch(op, g, bytes) != ncclSuccess;
    for (int r = 0; r < g.n; ++r) BENCH_CHECK_CUDA(cudaEventRecord(stop[r], g.streams[r]));
    double slowest = 0;
    for (int r = 0; r < g.n; ++r) {
      BENCH_CHECK_CUDA(cudaEventSynchronize(stop[r]));
      float ms = 0;
      BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, start[r], stop[r]));
      slowest = std::max(slowest, ms * 1e-3 / 5);
    }
    if (i >= 3) runs.push_back(slowest);
  }
  for (int r = 0; r < g.n; ++r) {
    cudaEventDestroy(start[r]);
    cudaEventDestroy(stop[r]);
  }
  if (failed || runs.empty()) return -1;
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

bool open_group(Group& g, int n, size_t max_bytes) {
  g.n = n;
  g.comms.resize(n);
  std::vector<int> devices(n);
  for (int r = 0; r < n; ++r) devices[r] = r;
  if (ncclCommInitAll(g.comms.data(), n, devices.data()) != ncclSuccess) return false;
  g.streams.resize(n);
  g.send.resize(n);
  g.recv.resize(n);
  for (int r = 0; r < n; ++r) {
    BENCH_CHECK_CUDA(cudaSetDevice(r));
    BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&g.streams[r], cudaStreamNonBlocking));
    BENCH_CHECK_CUDA(cudaMalloc(&g.send[r], max_bytes));
    BENCH_CHECK_CUDA(cudaMalloc(&g.recv[r], max_bytes));
    BENCH_CHECK_CUDA(cudaMemset(g.send[r], 0, max_bytes));
  }
  return true;
}

void close_group(Group& g) {
  for (int r = 0; r < g.n; ++r) {
    cudaSetDevice(r);
    ncclCommDestroy(g.comms[r]);
    cudaStreamDestroy(g.streams[r]);
    cudaFree(g.send[r]);
    cudaFree(g.recv[r]);
  }
}

void run_series(const Series& s, int n, size_t max_bytes, int step,
                std::vector<bench::JsonObject>& points) {
  setenv("NCCL_ALGO", s.nccl_algo, 1);
  setenv("NCCL_PROTO", s.nccl_proto, 1);
  if (!*s.nccl_algo) unsetenv("NCCL_ALGO");
  Group g;
  if (!open_group(g, n, max_bytes)) {
    std::fprintf(stderr, "nccl_bench: cannot open a %d-GPU communicator\n", n);
    return;
  }
  bool failed = false;
  for (size_t bytes = 1024; bytes <= max_bytes && !failed; bytes <<= step) {
    const double t = time_op(s.op, g, bytes, failed);
    if (t <= 0) break;
    const double algbw = bytes / t / 1e9;
    bench::JsonObject p;
    p.add("op", s.op).add("ranks", n).add("nodes", 1).add("bytes", static_cast<double>(bytes));
    p.add("algorithm", s.algorithm).add("protocol", s.protocol).add("time_s", t);
    p.add("algbw_GBps", algbw).add("busbw_GBps", algbw * bus_factor(s.op, n));
    points.push_back(p);
  }
  if (failed)
    std::fprintf(stderr, "nccl_bench: %s %s/%s on %d GPUs not available, skipped\n", s.op,
                 s.nccl_algo, s.nccl_proto, n);
  close_group(g);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Flags flags = bench::parse_flags(argc, argv, "nccl_bench");
  int devices = 0;
  BENCH_CHECK_CUDA(cudaGetDeviceCount(&devices));
  if (devices < 2) {
    std::fprintf(stderr, "nccl_bench: needs at least 2 GPUs (found %d)\n", devices);
    return 1;
  }
  const size_t max_bytes = flags.quick ? size_t{1} << 26 : size_t{1} << 30;
  std::vector<bench::JsonObject> points;
  for (int n = 2; n <= devices; n *= 2) {
    for (const Series& s : kSeries) run_series(s, n, max_bytes, 2, points);
  }
  int version = 0;
  ncclGetVersion(&version);
  bench::write_raw(flags.out, "nccl_bench", bench::hardware(0, {{"nccl", std::to_string(version)}}),
                   "collective", points);
  return 0;
}
