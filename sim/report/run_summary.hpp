// The result of simulating one training step, as data; writers turn it into JSON and text.
//
// Field names are those of summary.json (README.md, `wallsim run`). Units: seconds, bytes, FLOPs
// (doubles).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/report/op_category.hpp"

namespace wallsim {

struct StageMemorySummary {
  int stage = 0;
  double weights = 0, grads = 0, optimizer = 0, activations = 0, buffers = 0, peak = 0;
  double unit_buffers = 0;           // ZeRO-2/3 transient unit gradients and gathered parameters
  double simulated_peak = 0;         // from the replay's memory timeline
  double simulated_activations = 0;  // simulated peak minus the static bytes
  double allocated = 0;              // PyTorch's max_memory_allocated (models/memory.hpp)
  double reserved = 0;               // PyTorch's max_memory_reserved
  double wgrad_placeholders = 0;     // Transformer Engine's cached weight-gradient placeholders
  double grad_transients = 0;        // output-layer placeholder and embedding gradient at the peak
  double host_optimizer = 0;         // host memory of the CPU optimizer (training.offload)
  double cuda_graphs = 0;            // per-layer CUDA graphs' static inputs and pool (in reserved)
};

// How the critical rank's step splits (the walls of sim/report/README.md).
struct TimeSplit {
  double step_s = 0;
  double ideal_s = 0;                 // its model FLOPs at the dense peak
  double compute_s = 0;               // time the compute stream was busy
  double compute_inefficiency_s = 0;  // compute_s - ideal_s
  // compute stream waiting on comm, by communication group (op_category.hpp's slots)
  std::array<double, kCommGroupCount> exposed_comm_s{};
  double bubble_s = 0;  // compute stream waiting on other pipeline stages
  double host_s = 0;    // compute stream idle, the next kernel not yet issued by the host
  double other_s = 0;   // the rest (waiting on peers' compute)
  // compute_s by compute kind (op_category.hpp's slots: gemm, attention, elementwise, optimizer)
  std::array<double, kComputeKindCount> compute_by_kind_s{};
  // the same kinds' model FLOPs at the dense peak (ideal_by_kind / compute_by_kind = efficiency)
  std::array<double, kComputeKindCount> ideal_by_kind_s{};
  double exposed_comm_total() const;
};

// What achieved kernel rates are measured against (KernelFamily's fractions).
struct KernelRates {
  // Dense peak FLOP/s of the precision each compute kind runs in (GEMMs the training
  // precision's, attention bf16's); 0 for kinds without model FLOPs.
  std::array<double, kComputeKindCount> peak_flops{};
  double hbm_bandwidth_Bps = 0;  // the profile's HBM bandwidth (vendor peak)
};

// One kernel family on the critical rank's compute stream (an op label without its layer and
// other numbering, OpGraph::label_family), with what its ops achieved.
struct KernelFamily {
  std::string family;  // "fc1 fwd", "experts fc1 fwd cast a", "qkv fwd (recompute)"
  std::string kind;    // its compute kind: "gemm", "attention", "elementwise", "optimizer"
  std::int64_t ops = 0;
  double time_s = 0;         // busy on the compute stream, as replayed (SM contention included)
  double share = 0;          // time_s over the rank's compute time (TimeSplit::compute_s)
  double host_wait_s = 0;    // the stream idle, each op's dependencies done but the op not issued
  double flops = 0;          // model FLOPs (Op::flops)
  double tflops_per_s = 0;   // flops / time_s / 1e12; 0 without FLOPs
  double peak_fraction = 0;  // flops / time_s over the kind's dense peak; 0 without a peak
  double bytes = 0;          // streamed through HBM by memory-bound kernels (Op::bytes)
  double GBps = 0;           // bytes / time_s / 1e9; 0 without bytes
  double hbm_fraction = 0;   // bytes / time_s over the HBM bandwidth
};

struct Wall {
  double share = 0;         // fraction of the step (memory: utilization of HBM)
  std::string contributor;  // the largest part ("bubble", "dp", "activations", ...)
};

struct Walls {
  Wall compute;         // share = (compute_inefficiency + bubble + host) / step
  Wall communication;   // share = exposed_comm / step
  Wall memory;          // share = peak bytes / HBM bytes of the worst rank
  std::string binding;  // "memory" | "compute" | "communication"
  // By how much the binding wall binds: memory: (peak - HBM) / HBM; otherwise its share minus
  // the other time wall's share (fraction of the step).
  double binding_margin = 0;
};

// Exposed communication of one group on the critical rank, and the tier its traffic crosses.
struct GroupExposure {
  std::string group;  // "tp", "cp", "ep", "dp", "pp"
  double exposed_s = 0;
  std::string tier;  // "nvlink" (one NVLink domain) or "network" (crosses domains)
};

// What one link carried during the step. busy_s = bytes / effective capacity: the time the
// link would be busy at full rate; utilization = busy_s / step.
struct LinkUsage {
  std::string name;  // "gpu3 -> nvswitch0"
  std::string tier;  // "nvlink", "pcie", "nic_leaf", "leaf_spine", "spine_core"
  double bytes = 0;
  double busy_s = 0;
  double utilization = 0;
};

// Links of one tier together: bytes summed, utilization of its busiest link and the mean.
struct TierUsage {
  std::string tier;
  int links = 0;
  double bytes = 0;
  double max_utilization = 0;
  double mean_utilization = 0;
};

// Step time after scaling one machine parameter, by re-simulating (--sensitivity).
struct Sensitivity {
  std::string parameter;  // "nvlink_bandwidth", "ib_bandwidth", "gemm_efficiency",
                          // "hbm_bandwidth", "host_issue_cost", "cuda_graphs"
  double factor = 1;      // applied scale (1.1, 0.9; GEMM efficiency is capped at the peak)
  double step_s = 0;
  double change = 0;    // step_s / baseline - 1
  std::string setting;  // a setting tried instead of a scale ("per_layer"); empty for scales
};

// One change that could make a layout fit, with the analytical peak it gives.
struct FitCandidate {
  std::string change;                  // "recompute=full", "pp=8", ...
  std::vector<std::string> overrides;  // the `--set` arguments that apply it
  bool valid = true;                   // false: the layout is impossible (reason in `note`)
  double peak_bytes = 0;
  bool fits = false;
  std::string note;
  // What fitting costs: the step re-simulated with the change (timed: a valid change that fits)
  // and its change against the run's own step.
  bool timed = false;
  double step_s = 0;
  double step_change = 0;
};

// p10, p50, p90 and mean of one quantity over the sampled steps (seconds).
struct Percentiles {
  double p10 = 0, p50 = 0, p90 = 0, mean = 0;
};

// Many seeded steps of a varied run (`wallsim run --samples N`): their spread and how often
// each wall bound. The rest of the summary describes the median sample.
struct StepDistribution {
  int samples = 0;
  int median_sample = 0;  // the sample nearest p50 of step time (lowest index among ties)
  Percentiles step;
  std::array<Percentiles, kCommGroupCount> exposed_comm;  // by communication group
  Percentiles bubble;
  double compute_binding = 0, communication_binding = 0, memory_binding = 0;  // shares
  std::vector<double> step_s;  // every sample's step time, by sample number
  // How often each global rank ended the step last (the critical rank; in symmetric fidelity the
  // replayed member of its class): most often first, ties by rank, at most 8.
  std::vector<std::pair<int, double>> critical_ranks;
};

// An empirical band around the predicted step time, from wallsim's errors on published runs
// like this one (models/validation/prediction_interval.hpp): not a confidence interval.
struct PredictionInterval {
  double low_s = 0;                                    // step / (1 + error_p90)
  double high_s = 0;                                   // step / (1 + error_p10)
  double error_p10 = 0, error_p50 = 0, error_p90 = 0;  // of t_predicted / t_measured - 1
  int rows = 0;                                        // published runs in the basis
  std::string basis;      // what the basis rows share with the run: "h100-sxm, dense, < 32K tokens"
  std::string unmatched;  // the run's traits the basis had to drop: fewer than 5 published
                          // runs share them ("" when none was dropped)
};

struct RunSummary {
  std::string model_name;
  std::string cluster_name;
  int num_gpus = 0;
  std::string layout;  // "tp8 sp pp4 vpp5 dp32 cp1"
  std::string fidelity;
  std::string network_model;
  std::string attention_backend;  // the kernel the run's attention used ("cudnn", "flash2", ...)
  std::string cuda_graphs;        // what the framework captured ("none", "per_layer", ...)
  int simulated_ranks = 0;
  int critical_rank = 0;  // global rank whose step ends last
  int critical_stage = 0;

  double iteration_time_s = 0;
  double tokens_per_iteration = 0;
  double tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;
  double peak_flops_per_gpu = 0;  // dense peak of the training precision
  double model_flops_per_iteration = 0;
  double hardware_flops_per_iteration = 0;

  double hbm_bytes = 0;
  double peak_bytes = 0;            // max over stages of the analytical peak
  double peak_allocated_bytes = 0;  // max over stages of allocated
  double peak_reserved_bytes = 0;   // max over stages of reserved
  double fit_margin = 0;            // fits: peak_bytes <= (1 - fit_margin) * hbm_bytes
  bool fits_in_memory = true;
  std::vector<StageMemorySummary> per_stage;

  TimeSplit time;
  Walls walls;
  std::vector<GroupExposure> exposure_by_group;  // groups with communication, table order
  std::vector<TierUsage> link_tiers;             // tiers with traffic
  std::vector<LinkUsage> busiest_links;          // by busy time, at most 10
  std::vector<Sensitivity> sensitivities;        // empty unless asked for
  std::vector<FitCandidate> fit_suggestions;     // empty when the layout fits
  KernelRates kernel_rates;
  std::vector<KernelFamily> kernel_families;     // every family, by time descending, ties by name
  std::optional<StepDistribution> distribution;  // --samples N with variability
  // With variability.stragglers: this step's time less the same sample's without them.
  std::optional<double> straggler_cost_s;
  // With stragglers: that step's time split (on its own critical rank); the difference with
  // `time` says where the stragglers' cost lands (own compute, a group's exposed communication,
  // the bubble).
  std::optional<TimeSplit> straggler_free_time;
  std::optional<PredictionInterval> prediction_interval;  // absent without validation data
  std::vector<std::string> notes;
};

}  // namespace wallsim
