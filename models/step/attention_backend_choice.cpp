#include "models/step/attention_backend_choice.hpp"

#include <string>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

constexpr int kHopper = 90;      // sm_90
constexpr int kAmpere = 80;      // sm_80
constexpr int kBlackwell = 100;  // sm_100 (B200, GB200); sm_103 (B300, GB300) counts as Blackwell
// TE 1.3 nvte_get_fused_attn_backend, F16_arbitrary_seqlen: head_dim <= 128 and % 8 == 0.
constexpr std::int64_t kCudnnMaxHeadDim = 128;
constexpr std::int64_t kCudnnHeadDimMultiple = 8;
constexpr std::int64_t kMlaQkHeadDim = 192;
constexpr std::int64_t kMlaVHeadDim = 128;

bool cudnn_head_dim_ok(std::int64_t d) {
  return d > 0 && d <= kCudnnMaxHeadDim && d % kCudnnHeadDimMultiple == 0;
}

}  // namespace

AttentionHeadDims attention_head_dims(const ModelSpec& model) {
  if (model.mla) {
    return {model.mla->qk_head_dim + model.mla->qk_rope_head_dim, model.mla->v_head_dim};
  }
  return {model.head_dim, model.head_dim};
}

bool cudnn_fused_attention_eligible(int compute_capability, const AttentionHeadDims& dims) {
  const bool head_dims = cudnn_head_dim_ok(dims.qk) && cudnn_head_dim_ok(dims.v);
  if (compute_capability == kAmpere || compute_capability == kHopper) return head_dims;
  if (compute_capability >= kBlackwell) {
    // cuDNN >= 9.11 on sm_100+: MLA's d_qk = 192, d_v = 128 trains too (TE fused_attn.cpp,
    // docs/reference/blackwell.md §5).
    return head_dims || (dims.qk == kMlaQkHeadDim && dims.v == kMlaVHeadDim);
  }
  return false;
}

AttentionBackend default_attention_backend(int compute_capability, const AttentionHeadDims& dims) {
  // TE prefers cuDNN fused attention from compute capability 9.0 on ("Hopper+").
  if (compute_capability >= kHopper && cudnn_fused_attention_eligible(compute_capability, dims)) {
    return AttentionBackend::kCudnn;
  }
  return AttentionBackend::kFlash2;
}

AttentionBackend resolve_attention_backend(const TrainingSpec& training, const ModelSpec& model,
                                           const GpuProfile& gpu, const std::string& config_file) {
  const AttentionBackend backend =
      training.attention_backend
          ? *training.attention_backend
          : default_attention_backend(gpu.compute_capability, attention_head_dims(model));
  const auto kernel = fused_kernel(backend);
  if (!kernel || gpu.has_attention(*kernel)) return backend;
  const std::string name(attention_backend_name(backend));
  const std::string chosen = training.attention_backend
                                 ? ""
                                 : " (Transformer Engine's default on sm_" +
                                       std::to_string(gpu.compute_capability) + " for head dims " +
                                       std::to_string(attention_head_dims(model).qk) + "/" +
                                       std::to_string(attention_head_dims(model).v) + ")";
  throw InputError(config_file, "training.attention_backend", name,
                   "the calibration profile " + gpu.source_file + " (" + gpu.name + ") has no " +
                       name + " attention tables" + chosen +
                       "; backends it has: " + gpu.attention_kernel_list() + ", or unfused");
}

}  // namespace wallsim::models
