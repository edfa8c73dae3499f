// The storage types of the optimizer's tensors (`training.optimizer`): Megatron-LM's
// precision-aware optimizer (--use-precision-aware-optimizer with --main-params-dtype,
// --exp-avg-dtype, --exp-avg-sq-dtype), which hands them to Transformer Engine's FusedAdam.
//
// Bytes per parameter of the optimizer state (before sharding over DP×CP):
//   master weights + exp_avg + exp_avg_sq.
// Without the precision-aware optimizer every one is fp32: 4 + 4 + 4 = 12 (megatron_formulas.md
// §2). With it, exp_avg and exp_avg_sq take the bytes of their dtype (fp8 is stored as uint8 with
// one fp32 scale per tensor, which is not counted); fp16 master weights take 2; fp32 master
// weights take 2 as well, because Megatron passes store_param_remainders=True to FusedAdam with
// TE >= 2.1 and FusedAdam then keeps only the 16 low bits of each fp32 master weight, the high
// 16 bits being the bf16 parameter itself (Megatron-LM@0075637 megatron/core/optimizer/
// optimizer_config.py `store_param_remainders`; TransformerEngine@04912bf
// transformer_engine/pytorch/optimizers/fused_adam.py; docs/reference/optimizer_precision.md).
#pragma once

#include <string_view>

namespace wallsim {
class JsonNode;
}

namespace wallsim::models {

// One optimizer tensor's element type.
enum class StateDtype { kFp32, kFp16, kBf16, kFp8 };
std::string_view state_dtype_name(StateDtype dtype);  // "fp32", "fp16", "bf16", "fp8"
double state_dtype_bytes(StateDtype dtype);           // 4, 2, 2, 1

struct OptimizerPrecision {
  bool precision_aware = false;
  StateDtype main_params = StateDtype::kFp32;  // fp32 | fp16
  StateDtype exp_avg = StateDtype::kFp32;      // fp32 | fp16 | bf16 | fp8
  StateDtype exp_avg_sq = StateDtype::kFp32;   // fp32 | fp16 | bf16 | fp8
};

// Bytes of one parameter's master weight: 4 (fp32); 2 as 16-bit remainders of the bf16 parameter
// with the precision-aware optimizer; 2 in fp16.
double master_weight_bytes(const OptimizerPrecision& precision);
// Master weight + exp_avg + exp_avg_sq: 12 by default.
double optimizer_state_bytes_per_param(const OptimizerPrecision& precision);
// HBM bytes the fused Adam step moves per parameter of the local shard: read the gradient, read
// and write exp_avg and exp_avg_sq, read and write the master weight and write the bf16
// parameter; remainders also read the bf16 parameter they complete. By default
// 4 + 2·(4 + 4) + 2·4 + 2 = 30. The gradient is read in fp32 (Megatron's optimizer reads an fp32
// main gradient) unless the precision-aware optimizer reads it in the buffer's own dtype
// (`main_grad_bytes`: 4, or 2 with bf16 main gradients).
double optimizer_step_bytes_per_param(const OptimizerPrecision& precision, double main_grad_bytes);

// `training.optimizer`: {"precision_aware": bool, "main_params_dtype", "exp_avg_dtype",
// "exp_avg_sq_dtype"}. A dtype other than fp32 needs precision_aware true, as Megatron asserts.
OptimizerPrecision parse_optimizer_precision(const JsonNode& node);

}  // namespace wallsim::models
