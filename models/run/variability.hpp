// Varied steps (the run config's `variability`, models/variability_spec.hpp): the speed of each
// simulated rank in one sample, the compute and communication services that apply it in the
// replay, and the spread of many samples.
//
// Symmetric fidelity replays one rank per class of ranks that run the same program. Every
// member of a class meets the others at least once a step (at the gradient reduction, and at
// every tensor- or context-parallel collective), so a class runs at the pace of its slowest
// member: the representative takes the largest speed factor of its class. Full fidelity gives
// every rank its own.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <utility>
#include <vector>

#include "models/step/step_program.hpp"
#include "models/variability_spec.hpp"
#include "sim/core/engine.hpp"
#include "sim/graph/replay.hpp"
#include "sim/report/percentiles.hpp"
#include "sim/report/run_summary.hpp"

namespace wallsim::models {

// A standard normal draw that is a pure function of its key (splitmix64 over the key's words,
// then Box-Muller).
double keyed_normal(std::uint64_t seed, std::initializer_list<std::uint64_t> key);

// exp(sigma z - sigma^2 / 2) with sigma^2 = ln(1 + cv^2): a lognormal factor of mean 1 and
// coefficient of variation `cv`; exactly 1 when cv is 0.
double lognormal_factor(double cv, double z);

// How much slower than nominal global rank `rank` runs its kernels in `sample`: persistent
// speed, step noise and stragglers multiplied.
double gpu_slowdown(const VariabilitySpec& spec, std::int64_t rank, int gpus_per_node,
                    std::uint64_t sample);

// The same per simulated rank of `program`: the largest over the rank's class.
std::vector<double> rank_slowdowns(const VariabilitySpec& spec, const StepProgram& program,
                                   int gpus_per_node, std::uint64_t sample);

// Kernel durations of a varied step: the builder's (contended as OpDurations gives them) times
// the rank's slowdown and a per-kernel lognormal factor of its compute kind's kernel_cv.
class VariedDurations final : public ComputeService {
 public:
  VariedDurations(const VariabilitySpec& spec, const StepProgram& program,
                  std::vector<double> slowdowns, std::uint64_t sample);
  Time duration(RankIndex rank, OpIndex index, const Op& op, bool contended) override;

 private:
  const VariabilitySpec& spec_;
  const StepProgram& program_;
  std::vector<double> slowdowns_;
  std::uint64_t sample_;
  OpDurations base_;
};

// Communication of a varied step: each collective and transfer ends 1 + collective_jitter * |z|
// times its network time after it started (the k-th on a group, or between a pair, draws key k).
class JitteredComm final : public CommService {
 public:
  JitteredComm(Engine& engine, CommService& inner, const VariabilitySpec& spec,
               std::uint64_t sample);
  void start_collective(GroupIndex group, std::uint32_t payload, Done done) override;
  void start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload, Done done) override;

 private:
  Done stretched(Done done, std::initializer_list<std::uint64_t> key);

  Engine& engine_;
  CommService& inner_;
  const VariabilitySpec& spec_;
  std::uint64_t sample_;
  std::vector<std::uint64_t> collectives_;                              // started per group
  std::map<std::pair<RankIndex, RankIndex>, std::uint64_t> transfers_;  // started per pair
};

// The spread of `samples` (index = sample number) and which sample is the median step (the one
// nearest p50, the lowest index among ties).
StepDistribution distribution_of(const std::vector<RunSummary>& samples);

}  // namespace wallsim::models
