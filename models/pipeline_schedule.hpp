// Pipeline schedules as data: for each stage, the ordered list of passes it runs — forward F,
// backward B and (for schedules that split the backward) weight-gradient W, each for one
// micro-batch and one model chunk — and where each chunk sits in the chain of virtual stages.
//
// A schedule is a registry entry selected by `training.schedule`. The step builder emits ops
// from the list (models/step/pipeline_ops.hpp) and the memory report replays it for the
// activations it keeps alive, so a new schedule is a new entry: its order, its placement of
// virtual stages, and the shapes it accepts. The built-in entries (models/schedules/):
//
//  * "1f1b" (PipeDream-flush, one chunk per stage): warm-up of min(pp − stage − 1, m) forwards,
//    then one forward / one backward pairs, then the remaining backwards; stage s holds at most
//    min(pp − s, m) micro-batches (Narayanan et al. 2021 §2.2).
//  * "interleaved" (interleaved 1F1B, vpp > 1 chunks per stage): forwards follow Megatron-LM's
//    schedule table (groups of pp micro-batches, chunk-major within a group); backwards the same
//    with the chunk order reversed; warm-up 2·(pp − stage − 1) + (vpp − 1)·pp forwards, or
//    everything when m = pp (Megatron-LM schedules.py, microbatch_group_size_per_vp_stage = pp).
//
//  * "zb_h1", "zb_h2" (zero-bubble, Qi et al. 2024 §3.1; models/schedules/zero_bubble.cpp): one
//    chunk per stage, B and W split, W deferred into what would be bubbles; ZB-H1 at 1F1B's
//    peak of p micro-batches on every stage, ZB-H2 at 2p − 1.
//  * "zbv" (ZB-V, Qi et al. 2024; models/schedules/zero_bubble_v.cpp) and "dualpipev" (DualPipeV,
//    DeepSeek-V3's DualPipe cut in half; models/schedules/dualpipe_v.cpp): two chunks per stage
//    in a V, B and W split; ZB-V at 1F1B's peak of 2p chunks (p micro-batches of a stage) on
//    every stage, DualPipeV at 2p + 1 with m ≥ 2p and its forward/backward pairs overlappable.
//  * "dualpipe" (DualPipe, DeepSeek-V3 §3.2.1; models/schedules/dualpipe.cpp): two pipelines in
//    opposite directions over the same layers, each stage holding one chunk of each (two copies
//    of the parameters), half the micro-batches entering at each end; B and W split; at most
//    pp + 1 chunks in flight; pairs overlappable as DualPipeV's.
//
// 1f1b and interleaved fuse W into B: their backward computes input and weight gradients
// together. 1f1b, interleaved, zb_h1 and zb_h2 place chunk c of stage s at virtual stage
// c·pp + s (Megatron's chunk-major numbering); zbv and dualpipev in a V (v_shape_virtual_stage):
// the last stage holds the two middle virtual stages, stage 0 the first and the last.
//
// Chains: a schedule's virtual stages may form more than one pipeline over the whole model
// (`chains`; DualPipe's two directions). Chain k is virtual stages k·n … (k+1)·n − 1, n =
// pp·vpp / chains; position i of every chain holds the same layers, so a stage holds the
// parameters of each of its chunks once per chunk (DualPipe's two copies), and the micro-batches
// k·m/chains … (k+1)·m/chains − 1 run chain k only: each (micro-batch, chunk) of the order
// belongs to the chunk's chain. Activations move between neighbours of one chain.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wallsim::models {

enum class Pass : std::uint8_t {
  kForward,   // F
  kBackward,  // B: input gradients (and weight gradients where the schedule fuses W into B)
  kWeight,    // W: weight gradients, in schedules that split them from B
};

struct ScheduleItem {
  Pass pass = Pass::kForward;
  std::int64_t microbatch = 0;
  std::int64_t chunk = 0;
  bool forward() const { return pass == Pass::kForward; }
};

struct PipelineShape {
  std::int64_t pp = 1;
  std::int64_t vpp = 1;  // model chunks per stage
  std::int64_t microbatches = 1;
};

struct PipelineSchedule {
  std::string name;     // the `training.schedule` value
  std::string summary;  // one line for help texts and errors
  // Why the schedule cannot run `shape` (naming the config key at fault), or "" when it can.
  std::function<std::string(const PipelineShape&)> rejects;
  // The passes of `stage`, in issue order.
  std::function<std::vector<ScheduleItem>(const PipelineShape&, std::int64_t stage)> order;
  // The virtual stage (0 … pp·vpp − 1, the position in the model's chain of layers) that chunk
  // `chunk` of `stage` holds. Must be a bijection.
  std::function<std::int64_t(const PipelineShape&, std::int64_t stage, std::int64_t chunk)>
      virtual_stage;
  // The order has W items (otherwise each B includes its weight gradients).
  bool splits_weight_gradients = false;
  // Pipelines over the whole model the virtual stages form (see above); pp·vpp must divide by it
  // and m too (`rejects` says so).
  std::int64_t chains = 1;
  // A backward followed by a forward of another micro-batch may run as one combined pair (the
  // EP all-to-all overlap) without waiting for the neighbouring stage's pair: the schedule has
  // a spare warm-up forward for it.
  bool pairs_backward_with_forward = false;
};

// Registered schedules, built-in ones first. References stay valid while the program runs.
const std::deque<PipelineSchedule>& pipeline_schedules();
std::vector<std::string> pipeline_schedule_names();
// The schedule named `name`, or nullptr.
const PipelineSchedule* find_pipeline_schedule(std::string_view name);
// Adds a schedule (a name not yet registered) and returns the registered entry. Register before
// configs naming it are parsed, from one thread.
const PipelineSchedule& register_pipeline_schedule(PipelineSchedule schedule);

// Megatron's chunk-major placement: chunk c of stage s is virtual stage c·pp + s.
std::int64_t chunk_major_virtual_stage(const PipelineShape& shape, std::int64_t stage,
                                       std::int64_t chunk);

// The V shape of two chunks per stage: chunk 0 of stage s is virtual stage s, chunk 1 is
// 2·pp − 1 − s. Activations run down the stages through chunk 0 and back up through chunk 1, so
// virtual stages pp − 1 and pp are both on the last stage (no transfer between them) and the
// first and the last virtual stage (embedding, loss) are both on stage 0.
std::int64_t v_shape_virtual_stage(const PipelineShape& shape, std::int64_t stage,
                                   std::int64_t chunk);

// A (stage, chunk) pair of the pipeline.
struct StageChunk {
  std::int64_t stage = 0;
  std::int64_t chunk = 0;
};

// A schedule's placement of virtual stages, both ways.
class VirtualStages {
 public:
  VirtualStages() = default;
  // Throws std::logic_error when the schedule's placement is not a bijection.
  VirtualStages(const PipelineSchedule& schedule, const PipelineShape& shape);

  // Virtual stages in all chains.
  std::int64_t count() const { return static_cast<std::int64_t>(place_.size()); }
  std::int64_t chains() const { return chains_; }
  // Virtual stages in one chain: the model's pipeline positions.
  std::int64_t chain_length() const { return count() / chains_; }
  // The position of virtual stage `v` in its chain (which layers it holds).
  std::int64_t position(std::int64_t v) const { return v % chain_length(); }
  std::int64_t of(std::int64_t stage, std::int64_t chunk) const;
  StageChunk place(std::int64_t virtual_stage) const;
  // The chunk holds the first (embedding) or the last (output layer, loss) position of its chain.
  bool first(std::int64_t stage, std::int64_t chunk) const {
    return position(of(stage, chunk)) == 0;
  }
  bool last(std::int64_t stage, std::int64_t chunk) const {
    return position(of(stage, chunk)) == chain_length() - 1;
  }
  // The virtual stage `step` (±1) from chunk `chunk` of `stage` along its chain, or nullopt past
  // the chain's end.
  std::optional<std::int64_t> next(std::int64_t stage, std::int64_t chunk, std::int64_t step) const;
  // Where position 0 (the embedding) and the last position (the output layer) of each chain are.
  std::vector<StageChunk> chain_starts() const;
  std::vector<StageChunk> chain_ends() const;

 private:
  std::int64_t vpp_ = 1;
  std::int64_t chains_ = 1;
  std::vector<std::int64_t> of_;  // [stage·vpp + chunk]
  std::vector<StageChunk> place_;
};

// For schedule authors: `warmup` forwards, then forward/backward pairs, then the remaining
// backwards (the 1F1B pattern over any forward and backward orders).
std::vector<ScheduleItem> warmup_then_pairs(const std::vector<ScheduleItem>& forwards,
                                            const std::vector<ScheduleItem>& backwards,
                                            std::int64_t warmup);

// Tensors a backward B of chunk c allocates and frees within itself (each vector per chunk;
// empty: none): `at_start[c]` while the micro-batch's tensors are still held (the output
// layer's weight-gradient placeholder), `at_end[c]` after B has freed what it frees (the
// embedding's dense gradient).
struct BackwardTransients {
  std::vector<double> at_start;
  std::vector<double> at_end;
};

// The most bytes held at once: a forward of chunk c adds chunk_bytes[c] until the pass that
// ends its backward (B, or W where the schedule splits it), and `freed_by_backward[c]` (empty:
// none) until its B in every schedule (tensors no W pass reads, e.g. the logits); each B adds
// its transients on top of what is held at its start and at its end.
double peak_in_flight_bytes(const std::vector<ScheduleItem>& order,
                            const std::vector<double>& chunk_bytes, bool splits_weight_gradients,
                            const std::vector<double>& freed_by_backward = {},
                            const BackwardTransients& transients = {});

// The largest number of (micro-batch, chunk) forwards alive at once.
std::int64_t peak_in_flight_chunks(const std::vector<ScheduleItem>& order,
                                   bool splits_weight_gradients);

}  // namespace wallsim::models
