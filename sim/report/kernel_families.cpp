#include "sim/report/kernel_families.hpp"

#include <algorithm>
#include <cstddef>
#include <tuple>

#include "sim/report/op_category.hpp"
#include "sim/report/time_attribution.hpp"

namespace wallsim {
namespace {

// One family's ops summed; times stay integral so the sums do not depend on the order.
struct Tally {
  std::int64_t ops = 0;
  Time busy;
  Time host_wait;
  double flops = 0;
  double bytes = 0;
};

double rate(double amount, double seconds) {
  return seconds > 0 ? amount / seconds : 0;
}

double fraction(double value, double of) {
  return of > 0 ? value / of : 0;
}

KernelFamily describe(std::string family, OpCategory category, const Tally& tally, double compute_s,
                      const KernelRates& rates) {
  KernelFamily f;
  f.family = std::move(family);
  f.kind = category_name(category);
  f.ops = tally.ops;
  f.time_s = tally.busy.seconds();
  f.share = fraction(f.time_s, compute_s);
  f.host_wait_s = tally.host_wait.seconds();
  f.flops = tally.flops;
  f.bytes = tally.bytes;
  const double flops_per_s = rate(f.flops, f.time_s);
  const double bytes_per_s = rate(f.bytes, f.time_s);
  f.tflops_per_s = flops_per_s / 1e12;
  f.GBps = bytes_per_s / 1e9;
  if (!is_communication(category)) {
    f.peak_fraction =
        fraction(flops_per_s, rates.peak_flops[static_cast<std::size_t>(category_slot(category))]);
  }
  f.hbm_fraction = fraction(bytes_per_s, rates.hbm_bandwidth_Bps);
  return f;
}

}  // namespace

std::vector<KernelFamily> kernel_families(const OpGraph& graph, const RankTrace& trace,
                                          StreamIndex compute_stream, const KernelRates& rates) {
  // Indexed by family label and category: a family's ops normally share one kind, but nothing
  // forces two kinds to name their kernels apart, so they are kept apart here.
  std::vector<Tally> tallies(graph.label_count() * kOpCategories.size());
  Time compute = Time::zero();
  for_each_compute_op(graph, trace, compute_stream, [&](const ComputeOpWait& wait) {
    const Op& op = graph.shared_op(wait.op);
    const OpRecord& record = trace.ops[wait.op];
    Tally& tally = tallies[graph.label_family(op.label) * kOpCategories.size() + op.category];
    tally.ops += 1;
    tally.busy += record.end - record.start;
    tally.host_wait += record.start - wait.issued_from;
    tally.flops += op.flops;
    tally.bytes += static_cast<double>(op.bytes);
    compute += record.end - record.start;
  });
  std::vector<KernelFamily> families;
  for (std::size_t i = 0; i < tallies.size(); ++i) {
    if (tallies[i].ops == 0) continue;
    const auto label = static_cast<std::uint32_t>(i / kOpCategories.size());
    const auto category = static_cast<OpCategory>(i % kOpCategories.size());
    families.push_back(
        describe(graph.label(label), category, tallies[i], compute.seconds(), rates));
  }
  std::sort(families.begin(), families.end(), [](const KernelFamily& a, const KernelFamily& b) {
    return std::tie(b.time_s, a.family, a.kind) < std::tie(a.time_s, b.family, b.kind);
  });
  return families;
}

}  // namespace wallsim
