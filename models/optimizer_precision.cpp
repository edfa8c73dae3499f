#include "models/optimizer_precision.hpp"

#include <string>

#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

StateDtype state_dtype_from_name(const std::string& name) {
  if (name == "fp16") return StateDtype::kFp16;
  if (name == "bf16") return StateDtype::kBf16;
  if (name == "fp8") return StateDtype::kFp8;
  return StateDtype::kFp32;
}

// A dtype key of `training.optimizer`; anything but fp32 needs the precision-aware optimizer.
StateDtype read_state_dtype(JsonObject& object, std::string_view key, bool precision_aware,
                            std::initializer_list<std::string_view> allowed) {
  const StateDtype dtype = state_dtype_from_name(object.choice_or(key, "fp32", allowed));
  if (dtype != StateDtype::kFp32 && !precision_aware) {
    object.at(key).fail(
        "needs training.optimizer.precision_aware true: Megatron keeps every optimizer tensor "
        "in fp32 without --use-precision-aware-optimizer");
  }
  return dtype;
}

}  // namespace

std::string_view state_dtype_name(StateDtype dtype) {
  switch (dtype) {
    case StateDtype::kFp32:
      return "fp32";
    case StateDtype::kFp16:
      return "fp16";
    case StateDtype::kBf16:
      return "bf16";
    case StateDtype::kFp8:
      return "fp8";
  }
  return "fp32";
}

double state_dtype_bytes(StateDtype dtype) {
  switch (dtype) {
    case StateDtype::kFp32:
      return 4.0;
    case StateDtype::kFp16:
    case StateDtype::kBf16:
      return 2.0;
    case StateDtype::kFp8:
      return 1.0;
  }
  return 4.0;
}

double master_weight_bytes(const OptimizerPrecision& precision) {
  // fp32 masters stored as the 16 bits the bf16 parameter lacks (store_param_remainders).
  if (precision.precision_aware && precision.main_params == StateDtype::kFp32) return 2.0;
  return state_dtype_bytes(precision.main_params);
}

double optimizer_state_bytes_per_param(const OptimizerPrecision& precision) {
  return master_weight_bytes(precision) + state_dtype_bytes(precision.exp_avg) +
         state_dtype_bytes(precision.exp_avg_sq);
}

double optimizer_step_bytes_per_param(const OptimizerPrecision& precision, double main_grad_bytes) {
  const double grad = precision.precision_aware ? main_grad_bytes : 4.0;
  const double moments =
      2.0 * (state_dtype_bytes(precision.exp_avg) + state_dtype_bytes(precision.exp_avg_sq));
  const bool remainders = precision.precision_aware && precision.main_params == StateDtype::kFp32;
  const double master = 2.0 * master_weight_bytes(precision) + 2.0 + (remainders ? 2.0 : 0.0);
  return grad + moments + master;
}

OptimizerPrecision parse_optimizer_precision(const JsonNode& node) {
  JsonObject object(node);
  OptimizerPrecision p;
  p.precision_aware = object.boolean_or("precision_aware", false);
  p.main_params =
      read_state_dtype(object, "main_params_dtype", p.precision_aware, {"fp32", "fp16"});
  p.exp_avg =
      read_state_dtype(object, "exp_avg_dtype", p.precision_aware, {"fp32", "fp16", "bf16", "fp8"});
  p.exp_avg_sq = read_state_dtype(object, "exp_avg_sq_dtype", p.precision_aware,
                                  {"fp32", "fp16", "bf16", "fp8"});
  object.finish();
  return p;
}

}  // namespace wallsim::models
