// The weight-gradient tensors autograd sees although the real gradients go straight into the
// fp32 (or bf16) main-gradient buffer. With gradient-accumulation fusion (Megatron-LM's default,
// `--no-gradient-accumulation-fusion` turns it off) every linear's weight-gradient GEMM
// accumulates into `param.main_grad`, yet its backward must still hand autograd a tensor of the
// weight's shape so that Megatron's DDP hook runs (docs/reference/allocator.md, section
// "Weight-gradient placeholders"):
//
//  * Transformer Engine's linears (QKV, projection, FC1, FC2, MLA's projections, shared and
//    routed experts, the MTP projection) return `get_dummy_wgrad(shape, dtype)`
//    (transformer_engine/pytorch/module/base.py, NVIDIA/TransformerEngine@fecb10b): one tensor
//    per distinct (rows, cols, dtype), allocated at the first backward that needs it and kept in
//    a module-level cache for the rest of the run. A rank therefore holds, for good, one
//    parameter-dtype tensor of each distinct weight shape among its stage's linears (from
//    Transformer Engine 2.3 for plain linears, 2.10 for grouped expert GEMMs).
//  * Megatron's own ColumnParallelLinear, the output layer
//    (megatron/core/tensor_parallel/layers.py, LinearWithGradAccumulationAndAsyncCommunication
//    .backward, NVIDIA/Megatron-LM@960c06b), allocates `torch.empty(main_grad.shape)` in the
//    activation dtype in each backward; the DDP hook drops it once autograd has delivered it, so
//    it lives through the output layer's backward only.
//  * The input embedding is a plain torch embedding: its backward builds the dense gradient of
//    the whole table (vocab/tp × h, activation dtype), which the hook adds into main_grad and
//    drops, at the end of the micro-batch's backward.
#pragma once

#include <cstdint>

#include "models/layout.hpp"
#include "models/model_spec.hpp"

namespace wallsim::models {

// Bytes of the cached Transformer Engine placeholders on `stage`: the distinct weight shapes of
// the linears of its decoder layers (and MTP layers on the last stage), each once, at 2 bytes
// (bf16 parameters).
double te_wgrad_placeholder_bytes(const ModelSpec& model, const Layout& layout, std::int64_t stage);

// Bytes of the output layer's placeholder, during its backward on the last stage (0 elsewhere;
// with tied embeddings too, the output layer's backward sees the shared table's main_grad).
double output_wgrad_placeholder_bytes(const ModelSpec& model, const Layout& layout,
                                      std::int64_t stage);

// Bytes of the embedding table's dense gradient at the end of a backward on the stage holding
// the input embedding (0 elsewhere).
double embedding_grad_bytes(const ModelSpec& model, const Layout& layout, std::int64_t stage);

}  // namespace wallsim::models
