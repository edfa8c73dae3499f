#include "models/step/cp_attention.hpp"

#include <algorithm>
#include <optional>
#include <string>

namespace wallsim::models {
namespace {

constexpr double kBf16Bytes = 2.0;

double product(std::int64_t a, std::int64_t b, std::int64_t c, std::int64_t d) {
  return static_cast<double>(a) * static_cast<double>(b) * static_cast<double>(c) *
         static_cast<double>(d);
}

// The blocks of a ring of `n` ranks over a block of `block` tokens, forward order
// (TE context_parallel.py, AttnFuncWithCPAndKVP2P.forward; the header lists the shapes): the
// causal diagonal, then per received block either the rank's queries against the first half of
// the keys (keys from an earlier rank) or the second half of the queries against all the keys
// (keys from a later rank); contiguous, a whole block from earlier ranks and nothing from later.
std::vector<std::vector<AttentionShape>> ring_blocks(const AttentionShape& block, std::int64_t n,
                                                     bool balanced, std::int64_t position) {
  std::vector<std::vector<AttentionShape>> steps{{block}};
  for (std::int64_t step = 1; step < n; ++step) {
    AttentionShape call = block;
    call.causal = false;
    const bool earlier = step <= position;
    if (balanced) {
      (earlier ? call.seq_kv : call.seq_q) = block.seq_kv / 2;
      steps.push_back({call});
    } else if (earlier) {
      steps.push_back({call});
    } else {
      steps.emplace_back();
    }
  }
  return steps;
}

// One pass's steps with their merge kernels; a ring of one rank merges nothing.
std::vector<CpRingStep> with_merges(const std::vector<std::vector<AttentionShape>>& blocks,
                                    CpMerge merge) {
  std::vector<CpRingStep> steps;
  bool first = true;
  for (const auto& calls : blocks) {
    CpRingStep step{calls, 0.0};
    if (blocks.size() > 1 && !calls.empty()) {
      step.merge_bytes = cp_merge_bytes(merge, calls.front(), first);
      first = false;
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

// Fills the forward and backward steps of a ring (backward: the forward blocks reversed,
// TE's AttnFuncWithCPAndKVP2P.backward) and the forward's output merges.
void set_ring_steps(CpAttentionPlan& plan, std::vector<std::vector<AttentionShape>> blocks) {
  plan.forward = with_merges(blocks, CpMerge::kForwardStatistics);
  bool first = true;
  for (const auto& calls : blocks) {
    if (blocks.size() < 2 || calls.empty()) continue;
    plan.output_merge_bytes.push_back(
        cp_merge_bytes(CpMerge::kForwardOutput, calls.front(), first));
    first = false;
  }
  std::reverse(blocks.begin(), blocks.end());
  plan.backward = with_merges(blocks, CpMerge::kBackwardGradients);
}

// All-gathered K and V: each query chunk attends causally (bottom-right aligned) to the key
// prefix that ends with it.
std::vector<AttentionShape> gathered_calls(const LayerDims& d, const CpLayout& cp,
                                           std::int64_t position) {
  const std::int64_t heads = d.heads / d.tp, kv_heads = d.kv_heads / d.tp;
  if (!cp.load_balance) {
    return {{d.batch, heads, kv_heads, d.seq, (position + 1) * d.seq, d.head_dim, true}};
  }
  const std::int64_t chunk = d.seq / 2;
  const std::int64_t first = 0;  // balanced: rank 0's blocks, see the header
  const auto chunks = zigzag_chunks(first, d.cp);
  std::vector<AttentionShape> calls;
  for (std::int64_t c : chunks) {
    calls.push_back({d.batch, heads, kv_heads, chunk, (c + 1) * chunk, d.head_dim, true});
  }
  return calls;
}

}  // namespace

// TE merges ring steps with elementwise kernels (context_parallel.py:
// flash_attn_fwd_softmax_lse_correction, flash_attn_fwd_out_correction(_init) and their
// second-half forms, the dq/dkv copy_ and add_ of the backward loop). Over a block of s_q
// queries and s_kv keys, with L = b·h·s_q statistics (fp32, one per query and head),
// O = b·h·s_q·d output or dQ elements and KV = 2·b·g·s_kv·d dK, dV elements (bf16):
//   forward statistics  first step a clone (read, write: 2·4·L); later
//                       lse ← max + log1p(exp(min − max)) of (lse, lse_step): read 2, write 1
//                       (3·4·L)
//   forward output      first step out ← out_step·exp(lse_step − lse): read out_step, write out
//                       (2·2·O) and read both statistics (2·4·L); later out += …: read out and
//                       out_step, write out (3·2·O) and read both statistics (2·4·L)
//   backward gradients  first step copies dQ and dK, dV (2·2·(O + KV)); later adds them into
//                       the accumulated ones (3·2·(O + KV))
double cp_merge_bytes(CpMerge merge, const AttentionShape& block, bool first_step) {
  constexpr double kStatBytes = 4.0;  // fp32 log-sum-exp
  const double heads_q = static_cast<double>(block.batch * block.heads);
  const double stats = heads_q * static_cast<double>(block.seq_q);
  const double out = stats * static_cast<double>(block.head_dim);
  const double kv = 2.0 * static_cast<double>(block.batch * block.kv_heads) *
                    static_cast<double>(block.seq_kv) * static_cast<double>(block.head_dim);
  const double accesses = first_step ? 2.0 : 3.0;
  switch (merge) {
    case CpMerge::kForwardStatistics:
      return accesses * kStatBytes * stats;
    case CpMerge::kForwardOutput:
      return accesses * kBf16Bytes * out + 2.0 * kStatBytes * stats;
    case CpMerge::kBackwardGradients:
      break;
  }
  return accesses * kBf16Bytes * (out + kv);
}

std::array<std::int64_t, 2> zigzag_chunks(std::int64_t rank, std::int64_t cp) {
  return {rank, 2 * cp - 1 - rank};
}

CpAttentionPlan cp_attention_plan(const LayerDims& d, const CpLayout& cp, std::int64_t position) {
  CpAttentionPlan plan;
  const double local_tokens = static_cast<double>(d.tokens());
  if (cp.type == CpCommType::kAllGather) {
    set_ring_steps(plan, {gathered_calls(d, cp, position)});
    plan.gather_kv_bytes =
        kBf16Bytes * 2.0 * product(d.batch, d.full_seq, d.kv_heads / d.tp, d.head_dim);
    return plan;
  }
  const std::int64_t a2a = cp.type == CpCommType::kP2p ? 1 : cp.a2a;
  const std::int64_t ring = cp.type == CpCommType::kA2a ? 1 : cp.p2p;
  if (a2a > 1) {
    plan.a2a_qkv_bytes = kBf16Bytes * local_tokens *
                         static_cast<double>((d.heads + 2 * d.kv_heads) / d.tp * d.head_dim);
    plan.a2a_out_bytes =
        kBf16Bytes * local_tokens * static_cast<double>(d.heads / d.tp * d.head_dim);
  }
  const std::int64_t heads = d.heads / d.tp / a2a, kv_heads = d.kv_heads / d.tp / a2a;
  const std::int64_t block = d.seq * a2a;  // tokens per sequence after the all-to-all
  const AttentionShape diagonal{d.batch, heads, kv_heads, block, block, d.head_dim, true};
  set_ring_steps(plan, ring_blocks(diagonal, ring, cp.load_balance, position));
  if (ring > 1) {
    plan.ring_kv_bytes = kBf16Bytes * 2.0 * product(d.batch, block, kv_heads, d.head_dim);
  }
  return plan;
}

std::vector<double> backward_ring_bytes(const CpAttentionPlan& plan) {
  const std::size_t n = plan.ring_steps();
  std::vector<double> bytes;
  if (n < 2) return bytes;
  for (std::size_t i = 0; i < n; ++i) {
    const bool sends_kv = i + 1 < n, sends_dkv = i > 0;
    bytes.push_back(plan.ring_kv_bytes * ((sends_kv ? 1.0 : 0.0) + (sends_dkv ? 1.0 : 0.0)));
  }
  return bytes;
}

CpAttention::CpAttention(OpEmitter& emit, const LayerDims& dims, const CpSetting& setting)
    : emit_(emit),
      setting_(setting),
      plan_(cp_attention_plan(dims, setting.layout,
                              setting.layout.type == CpCommType::kAllGather
                                  ? setting.cp_position
                                  : setting.ring_position)) {}

OpIndex CpAttention::exchange(const std::string& name, CollectiveOp op, double bytes,
                              GroupIndex group, const Deps& deps) {
  return emit_.collective(name, op, bytes, group, OpCategory::kCp, Streams::kCp, deps);
}

// The step's attention calls, then its merge kernel; the last op, or nullopt for an empty step.
std::optional<OpIndex> CpAttention::run_step(const CpRingStep& step, std::size_t index,
                                             bool backward, const Deps& wait) {
  if (step.blocks.empty()) return std::nullopt;
  const bool ring = plan_.ring_steps() > 1;
  const std::string suffix = ring ? " " + std::to_string(index) : "";
  OpIndex last =
      emit_.attention((backward ? "attn bwd" : "attn fwd") + suffix, step.blocks, backward, wait);
  if (step.merge_bytes > 0) {
    last = emit_.memory_bound((backward ? "attn dqkv merge" : "attn lse merge") + suffix,
                              step.merge_bytes, {}, OpCategory::kAttention);
  }
  return last;
}

Deps CpAttention::forward(const Deps& producer) {
  Deps ready = producer;
  if (plan_.a2a_qkv_bytes > 0) {
    ready = {exchange("cp a2a qkv", CollectiveOp::kAllToAll, plan_.a2a_qkv_bytes,
                      setting_.a2a_group, producer)};
  }
  if (plan_.gather_kv_bytes > 0) {
    ready = {exchange("cp ag kv", CollectiveOp::kAllGather, plan_.gather_kv_bytes,
                      setting_.cp_group, producer)};
  }
  const std::size_t n = plan_.ring_steps();
  std::optional<OpIndex> arrived;  // the transfer that brought this step's K and V
  std::optional<OpIndex> last_attention;
  for (std::size_t i = 0; i < n; ++i) {
    Deps wait = i == 0 ? ready : Deps{*arrived};
    std::optional<OpIndex> next;
    const auto send_next = [&](const Deps& deps) {
      if (i + 1 < n) {
        next = exchange("cp ring kv " + std::to_string(i + 1), CollectiveOp::kSendRecv,
                        plan_.ring_kv_bytes, setting_.ring_group, deps);
      }
    };
    if (setting_.overlap) send_next(i == 0 ? ready : Deps{});
    if (auto last = run_step(plan_.forward[i], i, /*backward=*/false, wait)) {
      last_attention = last;
    }
    if (!setting_.overlap) {
      send_next(last_attention ? Deps{*last_attention} : wait);
    }
    if (next) arrived = next;
  }
  for (std::size_t i = 0; i < plan_.output_merge_bytes.size(); ++i) {
    last_attention = emit_.memory_bound("attn out merge " + std::to_string(i),
                                        plan_.output_merge_bytes[i], {}, OpCategory::kAttention);
  }
  Deps done{*last_attention};
  if (plan_.a2a_out_bytes > 0) {
    done = {exchange("cp a2a out", CollectiveOp::kAllToAll, plan_.a2a_out_bytes, setting_.a2a_group,
                     done)};
  }
  return done;
}

Deps CpAttention::backward(const Deps& producer) {
  Deps ready = producer;
  if (plan_.a2a_out_bytes > 0) {
    ready = {exchange("cp a2a dout", CollectiveOp::kAllToAll, plan_.a2a_out_bytes,
                      setting_.a2a_group, producer)};
  }
  if (plan_.gather_kv_bytes > 0) {
    ready = {exchange("cp ag kv (bwd)", CollectiveOp::kAllGather, plan_.gather_kv_bytes,
                      setting_.cp_group, producer)};
  }
  const std::vector<double> sends = backward_ring_bytes(plan_);
  const std::size_t n = plan_.ring_steps();
  std::optional<OpIndex> previous_send;
  std::optional<OpIndex> last_attention;
  for (std::size_t i = 0; i < n; ++i) {
    // Step i's K and V came with the previous send; the send of step i carries the K and V of
    // the next step and the dK, dV of the previous one.
    Deps wait = i == 0 ? ready : Deps{*previous_send};
    Deps send_after = i == 0 ? ready : Deps{};
    if (i > 0 && last_attention) send_after.push_back(*last_attention);
    std::optional<OpIndex> send;
    if (!sends.empty()) {
      send = exchange("cp ring kv/dkv " + std::to_string(i), CollectiveOp::kSendRecv, sends[i],
                      setting_.ring_group, send_after);
      if (!setting_.overlap) wait.push_back(*send);
    }
    if (auto last = run_step(plan_.backward[i], i, /*backward=*/true, wait)) {
      last_attention = last;
    }
    if (send) previous_send = send;
  }
  Deps done{*last_attention};
  if (previous_send) done.push_back(*previous_send);
  if (plan_.a2a_qkv_bytes > 0) {
    done = {exchange("cp a2a dqkv", CollectiveOp::kAllToAll, plan_.a2a_qkv_bytes,
                     setting_.a2a_group, done)};
  }
  if (plan_.gather_kv_bytes > 0) {
    done = {exchange("cp rs dkv", CollectiveOp::kReduceScatter, plan_.gather_kv_bytes,
                     setting_.cp_group, done)};
  }
  return done;
}

}  // namespace wallsim::models
