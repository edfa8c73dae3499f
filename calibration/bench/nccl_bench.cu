// nccl_bench: NCCL collectives and send/recv, nccl-tests style: S as nccl-tests counts it,
// float32, algbw = S/t and busbw = algbw · factor (all-reduce 2(n-1)/n; all-gather,
// reduce-scatter, all-to-all (n-1)/n; send/recv 1). Every (algorithm, protocol) is forced
// through NCCL_ALGO / NCCL_PROTO on a fresh communicator, for groups of the first 2, 4, ... ranks.
//
// Two modes, one program:
//   * one process over the local GPUs (ncclCommInitAll): one node; needs at least 2 GPUs;
//   * built with MPI and started by mpirun with more than one process: one process per GPU
//     (ncclCommInitRank, the unique id broadcast with MPI_Bcast), across nodes. A node is a
//     shared-memory domain (MPI_Comm_split_type SHARED); a group's `nodes` counts the nodes of
//     its ranks, so with ranks placed node by node (mpirun's default) the first groups are
//     single-node and the last span nodes. Tree all-reduce is measured on multi-node groups,
//     NVLS on single-node ones. Rank 0 writes the file.
// Writes raw JSON "collective".
#include <nccl.h>

#include <set>

#ifdef WALLSIM_BENCH_WITH_MPI
#include <mpi.h>
#endif

#include "bench_common.hpp"

namespace {

enum class Scope { kAny, kSingleNode, kMultiNode };

struct Series {
  const char* op;         // wallsim name
  const char* algorithm;  // wallsim name
  const char* nccl_algo;  // NCCL_ALGO value, "" for p2p
  const char* protocol;   // wallsim name
  const char* nccl_proto;
  Scope scope;
};

const Series kSeries[] = {
    {"all_reduce", "ring", "Ring", "ll", "LL", Scope::kAny},
    {"all_reduce", "ring", "Ring", "ll128", "LL128", Scope::kAny},
    {"all_reduce", "ring", "Ring", "simple", "Simple", Scope::kAny},
    {"all_reduce", "nvls", "NVLS", "simple", "Simple", Scope::kSingleNode},
    {"all_reduce", "tree", "Tree", "ll", "LL", Scope::kMultiNode},
    {"all_reduce", "tree", "Tree", "ll128", "LL128", Scope::kMultiNode},
    {"all_reduce", "tree", "Tree", "simple", "Simple", Scope::kMultiNode},
    {"all_gather", "ring", "Ring", "ll", "LL", Scope::kAny},
    {"all_gather", "ring", "Ring", "ll128", "LL128", Scope::kAny},
    {"all_gather", "ring", "Ring", "simple", "Simple", Scope::kAny},
    {"reduce_scatter", "ring", "Ring", "ll", "LL", Scope::kAny},
    {"reduce_scatter", "ring", "Ring", "ll128", "LL128", Scope::kAny},
    {"reduce_scatter", "ring", "Ring", "simple", "Simple", Scope::kAny},
    {"send_recv", "p2p", "", "simple", "Simple", Scope::kAny},
    {"all_to_all", "pairwise", "", "simple", "Simple", Scope::kAny},
};

// Where this process stands. Single-process mode: one "rank" per local GPU, all on node 0.
struct World {
  bool mpi = false;
  int rank = 0;              // this process
  int ranks = 0;             // communicator ranks available (processes, or local GPUs)
  int device = 0;            // this process's GPU (MPI mode)
  std::vector<int> node_of;  // node index of every rank
};

// A communicator over ranks 0..n-1 and the part of it this process drives.
struct Group {
  int n = 0;
  int nodes = 1;
  std::vector<int> ranks;    // communicator ranks driven here (empty: not a member)
  std::vector<int> devices;  // their GPUs
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> send, recv;
#ifdef WALLSIM_BENCH_WITH_MPI
  MPI_Comm mpi = MPI_COMM_NULL;  // the member processes (MPI mode)
#endif
};

#ifdef WALLSIM_BENCH_WITH_MPI
void check_mpi(int status, const char* call) {
  if (status == MPI_SUCCESS) return;
  std::fprintf(stderr, "nccl_bench: %s failed (MPI error %d)\n", call, status);
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define BENCH_CHECK_MPI(call) check_mpi((call), #call)

// One process per GPU: the local rank picks the device; nodes are shared-memory domains,
// numbered by their first process's rank among the first processes of all nodes.
World mpi_world() {
  World w;
  w.mpi = true;
  BENCH_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank));
  BENCH_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &w.ranks));
  MPI_Comm local, leaders;
  BENCH_CHECK_MPI(
      MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local));
  int local_rank = 0, node = 0, devices = 0;
  BENCH_CHECK_MPI(MPI_Comm_rank(local, &local_rank));
  BENCH_CHECK_MPI(
      MPI_Comm_split(MPI_COMM_WORLD, local_rank == 0 ? 0 : MPI_UNDEFINED, w.rank, &leaders));
  if (local_rank == 0) BENCH_CHECK_MPI(MPI_Comm_rank(leaders, &node));
  BENCH_CHECK_MPI(MPI_Bcast(&node, 1, MPI_INT, 0, local));
  w.node_of.resize(w.ranks);
  BENCH_CHECK_MPI(MPI_Allgather(&node, 1, MPI_INT, w.node_of.data(), 1, MPI_INT, MPI_COMM_WORLD));
  BENCH_CHECK_CUDA(cudaGetDeviceCount(&devices));
  if (devices == 0) {
    std::fprintf(stderr, "nccl_bench: rank %d sees no GPU\n", w.rank);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  w.device = local_rank % devices;
  if (leaders != MPI_COMM_NULL) MPI_Comm_free(&leaders);
  MPI_Comm_free(&local);
  return w;
}
#endif

World local_world() {
  World w;
  BENCH_CHECK_CUDA(cudaGetDeviceCount(&w.ranks));
  w.node_of.assign(w.ranks, 0);
  return w;
}

// True on every member when any member failed (MPI mode agrees across processes).
bool any_failed(bool failed, const Group& g) {
#ifdef WALLSIM_BENCH_WITH_MPI
  if (g.mpi != MPI_COMM_NULL) {
    int mine = failed ? 1 : 0, any = 0;
    BENCH_CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, g.mpi));
    return any != 0;
  }
#endif
  (void)g;
  return failed;
}

double slowest_member(double seconds, const Group& g) {
#ifdef WALLSIM_BENCH_WITH_MPI
  if (g.mpi != MPI_COMM_NULL) {
    double slowest = 0;
    BENCH_CHECK_MPI(MPI_Allreduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, g.mpi));
    return slowest;
  }
#endif
  (void)g;
  return seconds;
}

void barrier(const Group& g) {
#ifdef WALLSIM_BENCH_WITH_MPI
  if (g.mpi != MPI_COMM_NULL) BENCH_CHECK_MPI(MPI_Barrier(g.mpi));
#endif
  (void)g;
}

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "send_recv") return 1.0;
  return (n - 1.0) / n;
}

// Enqueues one collective of nccl-tests size `bytes` on every rank this process drives.
ncclResult_t launch(const std::string& op, Group& g, size_t bytes) {
  const size_t count = bytes / sizeof(float), part = count / g.n;
  ncclGroupStart();
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    const int r = g.ranks[i];
    ncclComm_t c = g.comms[i];
    cudaStream_t s = g.streams[i];
    if (op == "all_reduce") ncclAllReduce(g.send[i], g.recv[i], count, ncclFloat, ncclSum, c, s);
    if (op == "all_gather") ncclAllGather(g.send[i], g.recv[i], part, ncclFloat, c, s);
    if (op == "reduce_scatter")
      ncclReduceScatter(g.send[i], g.recv[i], part, ncclFloat, ncclSum, c, s);
    if (op == "send_recv") {
      ncclSend(g.send[i], count, ncclFloat, (r + 1) % g.n, c, s);
      ncclRecv(g.recv[i], count, ncclFloat, (r + g.n - 1) % g.n, c, s);
    }
    if (op == "all_to_all") {
      for (int peer = 0; peer < g.n; ++peer) {
        ncclSend(g.send[i] + peer * part, part, ncclFloat, peer, c, s);
        ncclRecv(g.recv[i] + peer * part, part, ncclFloat, peer, c, s);
      }
    }
  }
  return ncclGroupEnd();
}

// Seconds of one timed run (5 back-to-back calls, per call) on the slowest rank here.
double timed_run(const std::string& op, Group& g, size_t bytes, std::vector<cudaEvent_t>& start,
                 std::vector<cudaEvent_t>& stop, bool& failed) {
  barrier(g);  // processes start together, so no rank's time includes waiting for another
  for (size_t i = 0; i < g.ranks.size(); ++i)
    BENCH_CHECK_CUDA(cudaEventRecord(start[i], g.streams[i]));
  for (int j = 0; j < 5 && !failed; ++j) failed = launch(op, g, bytes) != ncclSuccess;
  for (size_t i = 0; i < g.ranks.size(); ++i)
    BENCH_CHECK_CUDA(cudaEventRecord(stop[i], g.streams[i]));
  failed = any_failed(failed, g);
  if (failed) return -1;
  double slowest = 0;
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    BENCH_CHECK_CUDA(cudaEventSynchronize(stop[i]));
    float ms = 0;
    BENCH_CHECK_CUDA(cudaEventElapsedTime(&ms, start[i], stop[i]));
    slowest = std::max(slowest, ms * 1e-3 / 5);
  }
  return slowest_member(slowest, g);
}

// Median over 10 runs (after 3 warm-ups); the slowest rank counts. -1 when NCCL failed.
double time_op(const std::string& op, Group& g, size_t bytes, bool& failed) {
  std::vector<cudaEvent_t> start(g.ranks.size()), stop(g.ranks.size());
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    BENCH_CHECK_CUDA(cudaSetDevice(g.devices[i]));
    BENCH_CHECK_CUDA(cudaEventCreate(&start[i]));
    BENCH_CHECK_CUDA(cudaEventCreate(&stop[i]));
  }
  std::vector<double> runs;
  for (int i = 0; i < 13 && !failed; ++i) {
    const double t = timed_run(op, g, bytes, start, stop, failed);
    if (i >= 3 && !failed) runs.push_back(t);
  }
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    cudaEventDestroy(start[i]);
    cudaEventDestroy(stop[i]);
  }
  if (failed || runs.empty()) return -1;
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// Creates the communicators of ranks 0..n-1 this process drives; false (on every member)
// when NCCL refuses. Non-members of an MPI group get an empty group.
int nodes_of_first(const World& w, int n) {
  return static_cast<int>(std::set<int>(w.node_of.begin(), w.node_of.begin() + n).size());
}

bool open_group(const World& w, Group& g, int n, size_t max_bytes) {
  g.n = n;
  g.nodes = nodes_of_first(w, n);
  bool failed = false;
  if (!w.mpi) {
    for (int r = 0; r < n; ++r) g.ranks.push_back(r);
    g.devices = g.ranks;
    g.comms.resize(n);
    failed = ncclCommInitAll(g.comms.data(), n, g.devices.data()) != ncclSuccess;
  }
#ifdef WALLSIM_BENCH_WITH_MPI
  if (w.mpi) {
    BENCH_CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, w.rank < n ? 0 : MPI_UNDEFINED, w.rank, &g.mpi));
    if (w.rank >= n) return true;
    g.ranks = {w.rank};
    g.devices = {w.device};
    g.comms.resize(1);
    ncclUniqueId id{};
    if (w.rank == 0) failed = ncclGetUniqueId(&id) != ncclSuccess;
    BENCH_CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, g.mpi));
    BENCH_CHECK_CUDA(cudaSetDevice(w.device));
    failed = any_failed(failed, g) || ncclCommInitRank(&g.comms[0], n, id, w.rank) != ncclSuccess;
  }
#endif
  if (any_failed(failed, g)) return false;
  for (size_t i = 0; i < g.ranks.size(); ++i) {
    g.streams.emplace_back();
    g.send.emplace_back();
    g.recv.emplace_back();
    BENCH_CHECK_CUDA(cudaSetDevice(g.devices[i]));
    BENCH_CHECK_CUDA(cudaStreamCreateWithFlags(&g.streams[i], cudaStreamNonBlocking));
    BENCH_CHECK_CUDA(cudaMalloc(&g.send[i], max_bytes));
    BENCH_CHECK_CUDA(cudaMalloc(&g.recv[i], max_bytes));
    BENCH_CHECK_CUDA(cudaMemset(g.send[i], 0, max_bytes));
  }
  return true;
}

// After a failure, communicators are aborted (a peer may still wait in a collective).
void close_group(Group& g, bool failed) {
  for (size_t i = 0; i < g.comms.size(); ++i) {
    cudaSetDevice(g.devices[i]);
    if (g.comms[i]) failed ? ncclCommAbort(g.comms[i]) : ncclCommDestroy(g.comms[i]);
  }
  for (size_t i = 0; i < g.streams.size(); ++i) {
    cudaSetDevice(g.devices[i]);
    cudaStreamDestroy(g.streams[i]);
    cudaFree(g.send[i]);
    cudaFree(g.recv[i]);
  }
#ifdef WALLSIM_BENCH_WITH_MPI
  if (g.mpi != MPI_COMM_NULL) MPI_Comm_free(&g.mpi);
#endif
}

bench::JsonObject point(const Series& s, const Group& g, size_t bytes, double t) {
  const double algbw = bytes / t / 1e9;
  bench::JsonObject p;
  p.add("op", s.op)
      .add("ranks", g.n)
      .add("nodes", g.nodes)
      .add("bytes", static_cast<double>(bytes));
  p.add("algorithm", s.algorithm).add("protocol", s.protocol).add("time_s", t);
  p.add("algbw_GBps", algbw).add("busbw_GBps", algbw * bus_factor(s.op, g.n));
  return p;
}

void run_series(const World& w, const Series& s, int n, size_t max_bytes, int step,
                std::vector<bench::JsonObject>& points) {
  const int nodes = nodes_of_first(w, n);
  if ((s.scope == Scope::kSingleNode && nodes > 1) || (s.scope == Scope::kMultiNode && nodes == 1))
    return;
  setenv("NCCL_ALGO", s.nccl_algo, 1);
  setenv("NCCL_PROTO", s.nccl_proto, 1);
  if (!*s.nccl_algo) unsetenv("NCCL_ALGO");
  Group g;
  if (!open_group(w, g, n, max_bytes)) {
    if (w.rank == 0) std::fprintf(stderr, "nccl_bench: cannot open a %d-rank communicator\n", n);
    close_group(g, true);
    return;
  }
  bool failed = false;
  for (size_t bytes = 1024; bytes <= max_bytes && !failed && !g.ranks.empty(); bytes <<= step) {
    const double t = time_op(s.op, g, bytes, failed);
    if (t <= 0) break;
    if (w.rank == 0) points.push_back(point(s, g, bytes, t));
  }
  if (failed && w.rank == 0)
    std::fprintf(stderr, "nccl_bench: %s %s/%s on %d ranks (%d nodes) not available, skipped\n",
                 s.op, s.nccl_algo, s.nccl_proto, n, g.nodes);
  close_group(g, failed);
}

// Rank 0's clock decides for every process, so all stop before the same series.
bool budget_spent(const World& w, const bench::Budget& budget, std::size_t points) {
  int spent = w.rank == 0 && bench::stop_for_budget(budget, "nccl_bench", points) ? 1 : 0;
#ifdef WALLSIM_BENCH_WITH_MPI
  if (w.mpi) BENCH_CHECK_MPI(MPI_Bcast(&spent, 1, MPI_INT, 0, MPI_COMM_WORLD));
#endif
  return spent != 0;
}

// Group sizes 2, 4, 8, ... and the whole world when it is not a power of two.
std::vector<int> group_sizes(int ranks) {
  std::vector<int> sizes;
  for (int n = 2; n <= ranks; n *= 2) sizes.push_back(n);
  if (!sizes.empty() && sizes.back() != ranks) sizes.push_back(ranks);
  return sizes;
}

int run(const World& w, const bench::Flags& flags) {
  if (w.ranks < 2) {
    std::fprintf(stderr, "nccl_bench: needs at least 2 GPUs (found %d)\n", w.ranks);
    return 1;
  }
  const size_t max_bytes = flags.quick ? size_t{1} << 26 : size_t{1} << 30;
  std::vector<bench::JsonObject> points;
  const bench::Budget budget(flags.max_seconds);
  bool stopped = false;
  for (int n : group_sizes(w.ranks)) {
    for (const Series& s : kSeries) {
      if (stopped || (stopped = budget_spent(w, budget, points.size()))) break;
      run_series(w, s, n, max_bytes, 2, points);
    }
  }
  if (w.rank != 0) return 0;
  if (points.empty()) {
    std::fprintf(stderr, "nccl_bench: no collective ran; %s not written\n", flags.out.c_str());
    return 1;
  }
  int version = 0;
  ncclGetVersion(&version);
  bench::write_raw(
      flags.out, "nccl_bench",
      bench::hardware(
          w.device, {{"nccl", std::to_string(version)},
                     {"processes", w.mpi ? std::to_string(w.ranks) + " (MPI)" : "1 (local GPUs)"}}),
      "collective", points);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef WALLSIM_BENCH_WITH_MPI
  // Started by mpirun with several processes: one per GPU; started alone: the local GPUs.
  BENCH_CHECK_MPI(MPI_Init(&argc, &argv));
  int processes = 1;
  BENCH_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &processes));
  const World world = processes > 1 ? mpi_world() : local_world();
  const bench::Flags flags = bench::parse_flags(argc, argv, "nccl_bench");
  const int status = run(world, flags);
  MPI_Finalize();
  return status;
#else
  const bench::Flags flags = bench::parse_flags(argc, argv, "nccl_bench");
  return run(local_world(), flags);
#endif
}
