// The MoE MLP of one layer on one rank (Megatron-Core MoE, mechanics.md §4.2):
//
//   forward   router GEMM [T, h]×[h, E] and top-k (memory-bound) → permute (copies each token
//             once per chosen expert) → dispatch → [ETP all-gather] → grouped GEMM fc1 over the
//             local experts → activation → grouped GEMM fc2 → [ETP reduce-scatter] → combine →
//             unpermute (weights by the router probabilities, sums the k copies). Shared experts
//             (a TP-parallel MLP of width shared_ffn_hidden): by default on the compute stream
//             before the router, in line with the rest (Megatron-Core without
//             moe_shared_expert_overlap, its default: PyTorch's NCCL stream waits for the compute
//             issued before each exchange and the compute after waits for the exchange, so
//             nothing runs beside it); with the overlap
//             (`training.overlap.shared_expert`, alltoall and flex dispatchers only) fc1 and its
//             activation run while the dispatch is in flight and fc2 while the combine is.
//   backward  the reverse: unpermute, combine (an all-to-all again), fc2 dgrad and wgrad,
//             activation, fc1, dispatch, permute, router, then the shared experts (autograd
//             takes the nodes created last first); with the overlap, the shared experts' fc2
//             beside the combine and fc1 beside the dispatch.
//
// T = this rank's tokens (b·s/cp, ÷ tp with sequence parallelism). Dispatchers (bytes as
// nccl-tests' S, bf16):
//   alltoall   all-to-all over EP of T·k rows of h (dropless; the rows a rank sends), or of
//              E·C rows with a capacity (C = ceil(T·k/E · capacity_factor) per expert and source
//              rank, padded); all-gather / reduce-scatter over ETP when etp > 1.
//   allgather  all-gather of T rows over ETP×EP, reduce-scatter back.
//   flex       one all-to-all over ETP×EP where a token crosses the network to each NVLink domain
//              once and fans out over NVLink there: T·min(k, domains of the group) rows.
// Load: uniform routing sends every local expert T·k/E rows from each source rank. With
// `router_imbalance` the rank whose experts draw the most tokens receives ep·T·k·(its share)
// rows; the all-to-all moves that many rows per rank (its straggler) and every rank's grouped
// GEMM is timed with it (the combine waits for the slowest rank), so all EP ranks keep one
// program. The expert GEMMs are grouped GEMMs of one problem per local expert, each with the
// rows its expert receives on that rank (uneven under `router_imbalance`); with
// `moe_grouped_gemm: false` they run as one GEMM kernel per expert instead. A capacity caps each
// expert at ep·C rows: excess tokens are dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/model_spec.hpp"
#include "models/step/op_emitter.hpp"
#include "models/step/step_context.hpp"
#include "models/step/tp_linear.hpp"

namespace wallsim::models {

struct MoeSetting {
  bool active = false;  // the model has MoE layers
  std::int64_t ep = 1, etp = 1;
  MoeDispatcher dispatcher = MoeDispatcher::kAllToAll;
  bool grouped_gemm = true;  // one grouped kernel per expert GEMM, else one kernel per expert
  bool shared_expert_overlap = false;  // shared experts beside the dispatcher's exchanges
  GroupIndex ep_group = 0, etp_group = 0, tp_ep_group = 0;
  std::int64_t tp_ep_domains = 1;  // NVLink domains the ETP×EP group spans (flex)
  // Dropless all-to-all over more than one rank: before the exchange Megatron-Core all-gathers
  // every rank's token count per expert over the ETP×EP group (its dispatcher's preprocess,
  // gather_from_sequence_parallel_region on tp_ep_group) to size the uneven exchange.
  bool counts_gather = false;
};

// Routing arithmetic of one MoE layer on one rank, per micro-batch.
struct MoeLoad {
  double tokens = 0;            // T
  double sent_rows = 0;         // rows this rank dispatches (T·k, or E·C padded)
  double received_rows = 0;     // rows the busiest rank's local experts compute (before ETP)
  double capacity = 0;          // C per expert and source rank (0: dropless)
  double dropped_fraction = 0;  // share of the T·k routed rows over capacity
  double busiest_share = 0;     // the busiest EP rank's share of all routed rows
  std::vector<double> busiest_expert_rows;  // received_rows split over that rank's experts
};

MoeLoad moe_load(const MoeSpec& moe, double tokens, std::int64_t ep);

// The NVLink domains one token reaches when its `topk` experts are drawn uniformly without
// repetition from `experts` spread evenly over `domains` (Megatron places consecutive experts on
// consecutive EP ranks): D·(1 − C(E − E/D, k) / C(E, k)), the expected number of domains holding
// at least one of them. The flex (DeepEP-style) dispatcher sends a token once to each such
// domain and forwards it inside the domain over NVLink. 1 for one domain; topk for one expert
// per domain; D when k > E − E/D.
// With group-limited routing (`groups` groups of consecutive experts, the token's experts drawn
// from `group_topk` groups drawn uniformly): when each domain holds whole groups (G divisible by
// D, h = G/D per domain), a domain holding j of the chosen groups is missed with probability
// C((g − j)·E/G, k) / C(g·E/G, k), j hypergeometric (h of G groups, g drawn); when each group
// spans whole domains (D divisible by G), a domain is missed when its group is not chosen
// (1 − g/G) or is chosen and none of the k lands in its E/D experts. Other splits are taken as
// not group-limited. With one group per node and 4 of 8 groups (DeepSeek-V3 at EP 64 on 8
// nodes) a token reaches 3.6 nodes on average instead of 5.3.
double expected_domains_reached(std::int64_t experts, std::int64_t topk, std::int64_t domains,
                                std::int64_t groups = 0, std::int64_t group_topk = 0);

// What a layer's MoE forward / backward carries between its phases (the EP overlap runs another
// micro-batch's phases in between).
struct MoeForward {
  Deps sent;                      // the dispatched tokens
  Deps combined;                  // the expert outputs back home
  std::optional<OpIndex> shared;  // the shared experts' output, computed before the router
};
struct MoeBackward {
  Deps output_grad;  // the gradient of the layer's MoE output
  Deps combined;     // the output gradients at the experts
  Deps returned;     // the input gradients back home
  std::optional<OpIndex> shared_fc2;
  OpIndex fc2_wgrad = 0, fc1_wgrad = 0;
};

class MoeOps {
 public:
  MoeOps(OpEmitter& emit, const LayerDims& dims, const MoeSpec& moe, const MoeSetting& setting,
         TpLinear& shared_linear);

  // The MoE MLP after ln2; `deps` as LayerOps. Returns the op the residual waits for.
  OpIndex forward(const Deps& deps);
  // Appends the gradients in backward order: shared fc2, shared fc1, experts, router.
  // `recompute_activation`: the experts' activation is re-run first (recompute module moe_act).
  OpIndex backward(const Deps& deps, std::vector<GradReady>& grads, bool recompute_activation);

  // The same in phases: up to the dispatch, the experts up to the combine, the rest.
  MoeForward forward_dispatch(const Deps& deps);
  void forward_experts(MoeForward& state);
  OpIndex forward_finish(MoeForward& state);
  MoeBackward backward_combine(const Deps& deps);
  void backward_experts(MoeBackward& state, bool recompute_activation);
  OpIndex backward_finish(MoeBackward& state, std::vector<GradReady>& grads);

  // Parameters per GPU, in backward order; experts flagged (they reduce over expert DP).
  std::vector<ParamUnit> units(std::int64_t layer) const;
  const MoeLoad& load() const { return load_; }

 private:
  OpIndex exchange(const std::string& name, CollectiveOp op, double bytes, GroupIndex group,
                   const Deps& deps);
  Deps dispatch(const std::string& pass, const Deps& deps);
  Deps combine(const std::string& pass, const Deps& deps);
  // One problem per local expert, m = the rows that expert computes.
  // The experts' grouped GEMMs, one problem per local expert: fixed by the layer's load, so
  // built once.
  struct ExpertGemms {
    GroupedGemmShape fc1, fc2, fc1_dgrad, fc1_wgrad, fc2_dgrad, fc2_wgrad;
  };
  ExpertGemms expert_gemms() const;
  GroupedGemmShape experts(std::int64_t n, std::int64_t k) const;
  std::int64_t fc1_width() const;
  std::int64_t fc2_k() const;
  GemmShape router() const;
  GemmShape shared_fc1() const;
  GemmShape shared_fc2() const;
  // The shared experts' fc1 and its activation (forward).
  void shared_fc1_forward(const Deps& deps);
  bool shared_in_line() const {
    return moe_.shared_ffn_hidden > 0 && !setting_.shared_expert_overlap;
  }
  bool shared_beside() const {
    return moe_.shared_ffn_hidden > 0 && setting_.shared_expert_overlap;
  }
  double expert_elements() const;
  double row_bytes() const;
  // The alltoall dispatcher's reorder of the received rows by local expert (none for one).
  Deps reorder(const std::string& name, const Deps& deps);

  OpEmitter& emit_;
  LayerDims dims_;
  MoeSpec moe_;
  MoeSetting setting_;
  TpLinear& shared_;
  MoeLoad load_;
  std::int64_t local_experts_ = 1;
  double expert_rows_ = 0;  // rows one local expert computes on average (after ETP gather)
  // flex: rows one exchange moves each way, a token per domain holding one of its experts
  // (expected_domains_reached over ETP×EP).
  double flex_rows_ = 0;
  std::vector<std::int64_t> expert_problem_rows_;  // rows each local expert computes
  ExpertGemms gemms_;
};

}  // namespace wallsim::models
