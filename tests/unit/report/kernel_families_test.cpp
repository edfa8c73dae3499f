// The kernel-family table: busy time, achieved rates and host wait per family, from a rank's
// replayed records.
#include <catch2/catch.hpp>

#include <string>

#include "sim/report/kernel_families.hpp"
#include "sim/report/op_category.hpp"
#include "sim/report/time_attribution.hpp"

using namespace wallsim;

namespace {

constexpr StreamIndex kCompute = 0;
constexpr StreamIndex kComm = 1;

Time us(double value) {
  return Time::from_us(value);
}

// Peaks chosen round: GEMMs 1,000 TFLOP/s, attention 500 TFLOP/s, HBM 2,000 GB/s.
KernelRates rates() {
  KernelRates r;
  r.peak_flops[category_slot(OpCategory::kGemm)] = 1e15;
  r.peak_flops[category_slot(OpCategory::kAttention)] = 5e14;
  r.hbm_bandwidth_Bps = 2e12;
  return r;
}

// A rank trace built by hand: records in op order, labels with their families.
struct Fixture {
  OpGraph graph;
  RankTrace trace;
  OpIndex compute(const char* label, const char* family, OpCategory category, double flops,
                  double bytes, std::initializer_list<OpIndex> deps, double start, double end) {
    Op op;
    op.stream = kCompute;
    op.category = category_code(category);
    op.label = graph.intern_label(label, family);
    op.flops = flops;
    op.bytes = static_cast<float>(bytes);
    return add(op, deps, start, end);
  }
  OpIndex collective(std::initializer_list<OpIndex> deps, double start, double end) {
    Op op;
    op.kind = OpKind::kCollective;
    op.stream = kComm;
    op.category = category_code(OpCategory::kTp);
    op.label = graph.intern_label("L0 proj rs");
    return add(op, deps, start, end);
  }
  OpIndex add(const Op& op, std::initializer_list<OpIndex> deps, double start, double end) {
    const OpIndex index = graph.add(op, deps);
    trace.ops.push_back(OpRecord{us(start), us(end)});
    if (op.kind != OpKind::kCompute) trace.comm_ready.push_back(us(start));
    return index;
  }
};

// Two layers of fc1 (a GEMM) then an activation (memory-bound), a TP collective between them:
//   L0 fc1 fwd   0 – 10 µs, 4 GFLOP
//   L0 act fwd  12 – 17 µs, 8 MB; the stream was free at 10 and it had no dependency, so the
//               2 µs before it are the host's
//   tp rs       17 – 20 µs on the comm stream, after L0 act fwd
//   L1 fc1 fwd  21 – 31 µs, 4 GFLOP, after the collective: 17 – 20 exposed TP, 20 – 21 host
//   L1 act fwd  31 – 36 µs, 8 MB, straight after
Fixture two_layers() {
  Fixture f;
  f.compute("L0 fc1 fwd", "fc1 fwd", OpCategory::kGemm, 4e9, 0, {}, 0, 10);
  const OpIndex act =
      f.compute("L0 act fwd", "act fwd", OpCategory::kElementwise, 0, 8e6, {}, 12, 17);
  const OpIndex rs = f.collective({act}, 17, 20);
  f.compute("L1 fc1 fwd", "fc1 fwd", OpCategory::kGemm, 4e9, 0, {rs}, 21, 31);
  f.compute("L1 act fwd", "act fwd", OpCategory::kElementwise, 0, 8e6, {}, 31, 36);
  return f;
}

}  // namespace

TEST_CASE("a kernel family sums its ops' replayed time, FLOPs and bytes into achieved rates",
          "[report][kernels]") {
  const Fixture f = two_layers();
  const auto families = kernel_families(f.graph, f.trace, kCompute, rates());
  REQUIRE(families.size() == 2);
  // fc1 fwd: 2 × 10 µs of the 30 µs of compute; 8 GFLOP / 20 µs = 400 TFLOP/s, 40% of 1,000.
  const KernelFamily& fc1 = families[0];
  CHECK(fc1.family == "fc1 fwd");
  CHECK(fc1.kind == "gemm");
  CHECK(fc1.ops == 2);
  CHECK(fc1.time_s == Approx(20e-6));
  CHECK(fc1.share == Approx(20.0 / 30));
  CHECK(fc1.flops == Approx(8e9));
  CHECK(fc1.tflops_per_s == Approx(400));
  CHECK(fc1.peak_fraction == Approx(0.4));
  CHECK(fc1.bytes == 0);
  CHECK(fc1.GBps == 0);
  // act fwd: 2 × 5 µs; 16 MB / 10 µs = 1,600 GB/s, 80% of 2,000; no FLOPs, so no FLOP rate.
  const KernelFamily& act = families[1];
  CHECK(act.family == "act fwd");
  CHECK(act.kind == "elementwise");
  CHECK(act.ops == 2);
  CHECK(act.time_s == Approx(10e-6));
  CHECK(act.share == Approx(10.0 / 30));
  CHECK(act.bytes == Approx(16e6));
  CHECK(act.GBps == Approx(1600));
  CHECK(act.hbm_fraction == Approx(0.8));
  CHECK(act.tflops_per_s == 0);
  CHECK(act.peak_fraction == 0);
}

TEST_CASE("the host's share of a gap goes to the family of the op that waited to be issued",
          "[report][kernels]") {
  const Fixture f = two_layers();
  const auto families = kernel_families(f.graph, f.trace, kCompute, rates());
  REQUIRE(families.size() == 2);
  // L0 act fwd waited 10 – 12 µs for the host; L1 fc1 fwd 20 – 21 µs (its collective ended
  // at 20, the 3 µs before are exposed TP, not host).
  CHECK(families[1].host_wait_s == Approx(2e-6));
  CHECK(families[0].host_wait_s == Approx(1e-6));
  // The same gaps as the time split: the families' host waits are its host time, their busy
  // times its compute time.
  const TimeSplit split = attribute_time(f.graph, f.trace, kCompute, us(36), 0);
  CHECK(split.host_s == Approx(families[0].host_wait_s + families[1].host_wait_s));
  CHECK(split.compute_s == Approx(families[0].time_s + families[1].time_s));
  CHECK(split.exposed_comm_s[category_slot(OpCategory::kTp)] == Approx(3e-6));
}

TEST_CASE("kernel families come by time descending, equal times by name", "[report][kernels]") {
  Fixture f;
  // Attention 4 GFLOP in 10 µs: 400 TFLOP/s, 80% of attention's 500 TFLOP/s peak.
  f.compute("L0 attn fwd", "attn fwd", OpCategory::kAttention, 4e9, 0, {}, 0, 10);
  f.compute("L0 ln2 fwd", "ln2 fwd", OpCategory::kElementwise, 0, 1e6, {}, 10, 14);
  f.compute("L0 ln1 fwd", "ln1 fwd", OpCategory::kElementwise, 0, 1e6, {}, 14, 18);
  const auto families = kernel_families(f.graph, f.trace, kCompute, rates());
  REQUIRE(families.size() == 3);
  CHECK(families[0].family == "attn fwd");
  CHECK(families[0].peak_fraction == Approx(0.8));
  CHECK(families[1].family == "ln1 fwd");
  CHECK(families[2].family == "ln2 fwd");
}

TEST_CASE("communication ops and other streams are not kernel families", "[report][kernels]") {
  Fixture f;
  const OpIndex a = f.compute("L0 fc1 fwd", "fc1 fwd", OpCategory::kGemm, 1e9, 0, {}, 0, 10);
  f.collective({a}, 10, 15);
  const auto families = kernel_families(f.graph, f.trace, kCompute, rates());
  REQUIRE(families.size() == 1);
  CHECK(families[0].family == "fc1 fwd");
  CHECK(families[0].share == Approx(1.0));
}
