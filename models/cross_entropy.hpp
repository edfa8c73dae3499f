// training.cross_entropy_fusion: how the vocab-parallel cross-entropy of the output layer runs,
// as the memory-bound kernels it launches over the [s', b, V/t] logits of one micro-batch.
//
// Each pass reads and writes whole logit tensors, so its cost is bytes per logit element;
// docs/reference/cross_entropy.md derives every figure below from the framework's source.
//  * none (Megatron-LM's default; megatron/core/tensor_parallel/cross_entropy.py): the bf16
//    logits are converted to fp32 (read 2, write 4), then max (read 4), subtract the max in
//    place (8), exp in place (8), sum (4) and divide by the sum in place (8): 38 bytes in six
//    kernels, with three fp32 all-reduces per token over TP (max, target logit, sum). The
//    backward scales the saved fp32 softmax by the loss gradient in place (8) and autograd
//    casts it back to bf16 for the output layer (read 4, write 2): 14 bytes in two kernels.
//  * native (--cross-entropy-loss-fusion, megatron/core/fusions/fused_cross_entropy.py): the
//    conversion and max are one fused kernel (10), exp in place (8), sum (4), loss and divide
//    (8): 30 bytes in four kernels; target logit and sum share one all-reduce of 8 bytes per
//    token. The backward is the same 14 bytes.
//  * te (--cross-entropy-fusion-impl te, Transformer Engine's Triton kernels in
//    transformer_engine/pytorch/triton/cross_entropy.py): an online-softmax pass reads the bf16
//    logits once (2) and keeps the max, the sum and the target logit per token (12 bytes, all
//    gathered over TP); the backward rewrites the logits in place as their gradient (read 2,
//    write 2). The kept tensor is the bf16 logits, not an fp32 softmax.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wallsim::models {

enum class CrossEntropyFusion { kNone, kNative, kTe };

constexpr std::string_view cross_entropy_fusion_name(CrossEntropyFusion fusion) {
  switch (fusion) {
    case CrossEntropyFusion::kNone:
      return "none";
    case CrossEntropyFusion::kNative:
      return "native";
    case CrossEntropyFusion::kTe:
      return "te";
  }
  return "unknown";
}

inline std::vector<std::string> cross_entropy_fusion_names() {
  return {"none", "native", "te"};
}

constexpr std::optional<CrossEntropyFusion> cross_entropy_fusion_from_name(std::string_view name) {
  for (CrossEntropyFusion fusion :
       {CrossEntropyFusion::kNone, CrossEntropyFusion::kNative, CrossEntropyFusion::kTe}) {
    if (cross_entropy_fusion_name(fusion) == name) return fusion;
  }
  return std::nullopt;
}

// What follows a pass over TP: nothing, all-reduces of `bytes_per_token` each, or an
// all-gather of every rank's `bytes_per_token`.
enum class LogitCollective { kNone, kAllReduce, kAllGather };

struct LogitPass {
  std::string_view name;
  double bytes_per_logit = 0;  // read + written, per element of the [s', b, V/t] logits
  LogitCollective then = LogitCollective::kNone;
  int collectives = 0;         // how many of them
  double bytes_per_token = 0;  // each collective's bytes per token of the micro-batch
};

struct CrossEntropyKernels {
  std::vector<LogitPass> forward;
  std::vector<LogitPass> backward;
  double kept_bytes_per_logit = 0;  // what the forward saves for the backward
};

inline CrossEntropyKernels cross_entropy_kernels(CrossEntropyFusion fusion) {
  using C = LogitCollective;
  switch (fusion) {
    case CrossEntropyFusion::kNone:
      return {{{"to fp32", 6},
               {"max", 4, C::kAllReduce, 1, 4},
               {"subtract max", 8},
               {"exp", 8},
               {"sum", 4, C::kAllReduce, 2, 4},
               {"normalise", 8}},
              {{"scale", 8}, {"to bf16", 6}},
              4};
    case CrossEntropyFusion::kNative:
      return {{{"to fp32 and max", 10, C::kAllReduce, 1, 4},
               {"exp", 8},
               {"sum", 4, C::kAllReduce, 1, 8},
               {"loss and normalise", 8}},
              {{"scale", 8}, {"to bf16", 6}},
              4};
    case CrossEntropyFusion::kTe:
      return {{{"online softmax", 2, C::kAllGather, 1, 12}}, {{"gradient", 4}}, 2};
  }
  return {};
}

}  // namespace wallsim::models
