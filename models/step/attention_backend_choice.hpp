// Which attention backend a run uses: the config's training.attention_backend, or what
// Transformer Engine's DotProductAttention picks on the run's GPU.
//
// TE's rule (docs/reference/attention.md, from TE 1.2 on): from compute capability 9.0 on
// ("Hopper+", which takes in Blackwell's sm_100 and sm_103) it disables flash-attn whenever cuDNN
// fused attention (F16_arbitrary_seqlen) is eligible, and prefers flash-attn elsewhere. The
// eligibility implemented on sm80/sm90 is TE 1.3's for that cuDNN backend, the version of the
// NeMo 24.03 container: bf16 (the only precision the tables hold), head dims of Q·K and of V at
// most 128 and multiples of 8. On Blackwell (sm_100 and later) MLA's 192/128 head dims are
// eligible too (cuDNN >= 9.11, docs/reference/blackwell.md §5). Anything else falls back to
// FlashAttention-2 (TE 1.x pins flash-attn 2, never 3). TE's sequence-length conditions (multiples
// of 64, above 512) hold for every shape wallsim builds from training sequences of ≥ 1k tokens and
// are not checked. A backend named in the config is used as given.
#pragma once

#include <cstdint>

#include "models/attention_backend.hpp"
#include "models/model_spec.hpp"
#include "models/training_spec.hpp"
#include "sim/hw/gpu_profile.hpp"

namespace wallsim::models {

struct AttentionHeadDims {
  std::int64_t qk = 0;  // width of Q and K per head (MLA: qk_head_dim + qk_rope_head_dim)
  std::int64_t v = 0;   // width of V per head
};

AttentionHeadDims attention_head_dims(const ModelSpec& model);

// TE's F16_arbitrary_seqlen conditions on the head dims: TE 1.3's on sm80 and sm90, plus MLA's
// 192/128 on sm_100 and later.
bool cudnn_fused_attention_eligible(int compute_capability, const AttentionHeadDims& dims);

// Transformer Engine's choice: cuDNN on sm90 and later when eligible, FlashAttention-2 otherwise.
AttentionBackend default_attention_backend(int compute_capability, const AttentionHeadDims& dims);

// The backend the run uses; InputError naming the config file, training.attention_backend, the
// profile and the backends it has when the profile has no tables for a fused choice.
AttentionBackend resolve_attention_backend(const TrainingSpec& training, const ModelSpec& model,
                                           const GpuProfile& gpu, const std::string& config_file);

}  // namespace wallsim::models
