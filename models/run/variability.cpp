#include "models/run/variability.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

namespace wallsim::models {
namespace {

// What each draw is of: the first word of its key.
enum DrawKind : std::uint64_t {
  kGpuDraw = 1,         // (gpu, global rank): persistent over samples
  kStepDraw = 2,        // (step, sample, global rank)
  kKernelDraw = 3,      // (kernel, sample, global rank, op index)
  kCollectiveDraw = 4,  // (collective, sample, group, k)
  kTransferDraw = 5,    // (transfer, sample, src, dst, k)
};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A uniform draw in (0, 1): the top 53 bits, offset by half a step so that 0 never occurs.
double unit_uniform(std::uint64_t bits) {
  return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53;
}

Time scaled(Time duration, double factor) {
  if (factor == 1) return duration;
  return Time::from_ps(
      static_cast<std::int64_t>(std::llround(static_cast<double>(duration.ps()) * factor)));
}

}  // namespace

double keyed_normal(std::uint64_t seed, std::initializer_list<std::uint64_t> key) {
  std::uint64_t h = splitmix64(seed);
  for (const std::uint64_t word : key) h = splitmix64(h ^ word);
  const double u1 = unit_uniform(splitmix64(h ^ 0x1ULL));
  const double u2 = unit_uniform(splitmix64(h ^ 0x2ULL));
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
}

double lognormal_factor(double cv, double z) {
  if (cv <= 0) return 1;
  const double variance = std::log1p(cv * cv);
  return std::exp(std::sqrt(variance) * z - variance / 2);
}

double gpu_slowdown(const VariabilitySpec& spec, std::int64_t rank, int gpus_per_node,
                    std::uint64_t sample) {
  const auto r = static_cast<std::uint64_t>(rank);
  double factor = 1;
  if (spec.gpu_cv > 0)
    factor *= lognormal_factor(spec.gpu_cv, keyed_normal(spec.seed, {kGpuDraw, r}));
  if (spec.step_cv > 0) {
    factor *= lognormal_factor(spec.step_cv, keyed_normal(spec.seed, {kStepDraw, sample, r}));
  }
  for (const auto& straggler : spec.stragglers) {
    if ((straggler.rank && *straggler.rank == rank) ||
        (straggler.node && *straggler.node == rank / gpus_per_node)) {
      factor *= straggler.slowdown;
    }
  }
  return factor;
}

std::vector<double> rank_slowdowns(const VariabilitySpec& spec, const StepProgram& program,
                                   int gpus_per_node, std::uint64_t sample) {
  std::vector<double> slowdowns(program.graphs.size(), 1);
  for (std::size_t r = 0; r < slowdowns.size(); ++r) {
    double slowest = 0;
    for (const int offset : program.class_offsets[r]) {
      slowest = std::max(
          slowest, gpu_slowdown(spec, program.global_rank[r] + offset, gpus_per_node, sample));
    }
    slowdowns[r] = slowest;
  }
  return slowdowns;
}

VariedDurations::VariedDurations(const VariabilitySpec& spec, const StepProgram& program,
                                 std::vector<double> slowdowns, std::uint64_t sample)
    : spec_(spec), program_(program), slowdowns_(std::move(slowdowns)), sample_(sample) {}

Time VariedDurations::duration(RankIndex rank, OpIndex index, const Op& op, bool contended) {
  const Time base = base_.duration(rank, index, op, contended);
  double factor = slowdowns_[static_cast<std::size_t>(rank)];
  const auto category = static_cast<OpCategory>(op.category);
  if (static_cast<int>(op.category) < kOpCategoryCount && !is_communication(category)) {
    const double cv = spec_.kernel_cv[static_cast<std::size_t>(category_slot(category))];
    if (cv > 0) {
      const auto global = static_cast<std::uint64_t>(program_.global_rank[rank]);
      factor *= lognormal_factor(cv, keyed_normal(spec_.seed, {kKernelDraw, sample_, global,
                                                               static_cast<std::uint64_t>(index)}));
    }
  }
  return scaled(base, factor);
}

JitteredComm::JitteredComm(Engine& engine, CommService& inner, const VariabilitySpec& spec,
                           std::uint64_t sample)
    : engine_(engine), inner_(inner), spec_(spec), sample_(sample) {}

CommService::Done JitteredComm::stretched(Done done, std::initializer_list<std::uint64_t> key) {
  if (spec_.collective_jitter <= 0) return done;
  const double stretch = spec_.collective_jitter * std::abs(keyed_normal(spec_.seed, key));
  const Time started = engine_.now();
  return [this, stretch, started, done = std::move(done)]() mutable {
    const Time extra = scaled(engine_.now() - started, stretch);
    if (extra <= Time()) {
      done();
    } else {
      engine_.schedule_after(extra, std::move(done));
    }
  };
}

void JitteredComm::start_collective(GroupIndex group, std::uint32_t payload, Done done) {
  if (collectives_.size() <= group) collectives_.resize(group + 1, 0);
  const std::uint64_t k = collectives_[group]++;
  inner_.start_collective(group, payload,
                          stretched(std::move(done), {kCollectiveDraw, sample_, group, k}));
}

void JitteredComm::start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload, Done done) {
  const std::uint64_t k = transfers_[{src, dst}]++;
  inner_.start_transfer(
      src, dst, payload,
      stretched(std::move(done), {kTransferDraw, sample_, static_cast<std::uint64_t>(src),
                                  static_cast<std::uint64_t>(dst), k}));
}

namespace {
constexpr std::size_t kCriticalRanksShown = 8;
}  // namespace

StepDistribution distribution_of(const std::vector<RunSummary>& samples) {
  StepDistribution d;
  d.samples = static_cast<int>(samples.size());
  if (samples.empty()) return d;
  const auto collect = [&](auto field) {
    std::vector<double> values;
    values.reserve(samples.size());
    for (const auto& s : samples) values.push_back(field(s));
    return percentiles(std::move(values));
  };
  d.step = collect([](const RunSummary& s) { return s.iteration_time_s; });
  for (const auto& s : samples) d.step_s.push_back(s.iteration_time_s);
  for (int g = 0; g < kCommGroupCount; ++g) {
    d.exposed_comm[static_cast<std::size_t>(g)] = collect(
        [g](const RunSummary& s) { return s.time.exposed_comm_s[static_cast<std::size_t>(g)]; });
  }
  d.bubble = collect([](const RunSummary& s) { return s.time.bubble_s; });
  const double share = 1.0 / static_cast<double>(samples.size());
  std::map<int, double> critical;
  double nearest = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const std::string& wall = samples[i].walls.binding;
    (wall == "memory"          ? d.memory_binding
     : wall == "communication" ? d.communication_binding
                               : d.compute_binding) += share;
    critical[samples[i].critical_rank] += share;
    const double distance = std::abs(samples[i].iteration_time_s - d.step.p50);
    if (i == 0 || distance < nearest) {
      nearest = distance;
      d.median_sample = static_cast<int>(i);
    }
  }
  d.critical_ranks.assign(critical.begin(), critical.end());
  std::stable_sort(d.critical_ranks.begin(), d.critical_ranks.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (d.critical_ranks.size() > kCriticalRanksShown) d.critical_ranks.resize(kCriticalRanksShown);
  return d;
}

}  // namespace wallsim::models
