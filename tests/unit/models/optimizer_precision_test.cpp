// Optimizer state dtypes: Megatron-LM's precision-aware optimizer with Transformer Engine's
// FusedAdam (models/optimizer_precision.hpp).
#include "models/optimizer_precision.hpp"

#include <catch2/catch.hpp>

#include "models/memory.hpp"
#include "models/run_config.hpp"
#include "test_models.hpp"

using namespace wallsim::models;
using namespace wallsim::models::testing;
using Catch::Matchers::Contains;

namespace {

const std::string kExample = source_path("configs/examples/llama3-8b-8gpu.json");

OptimizerPrecision aware(StateDtype main, StateDtype m, StateDtype v) {
  return OptimizerPrecision{true, main, m, v};
}

}  // namespace

TEST_CASE("fp32 optimizer state is 12 bytes per parameter and its step streams 30",
          "[models][optimizer]") {
  // Master weight, exp_avg, exp_avg_sq: 4 + 4 + 4 (megatron_formulas.md §2). The step reads the
  // fp32 gradient (4), reads and writes m and v (16), reads and writes the master (8) and writes
  // the bf16 parameter (2): 30.
  const OptimizerPrecision plain;
  CHECK(optimizer_state_bytes_per_param(plain) == 12.0);
  CHECK(optimizer_step_bytes_per_param(plain, 4.0) == 30.0);
  // Without the precision-aware optimizer Adam reads an fp32 copy of a bf16 main gradient.
  CHECK(optimizer_step_bytes_per_param(plain, 2.0) == 30.0);
}

TEST_CASE("precision-aware fp32 master weights are stored as 16-bit remainders",
          "[models][optimizer]") {
  // store_param_remainders: the bf16 parameter is the high half of the fp32 master, so the
  // optimizer keeps 2 bytes, plus fp32 moments 4 + 4: 10. Its step reads and writes the
  // remainder and the bf16 parameter (8), m and v (16), and reads the gradient in the buffer's
  // dtype (4): 28.
  const OptimizerPrecision all_fp32 =
      aware(StateDtype::kFp32, StateDtype::kFp32, StateDtype::kFp32);
  CHECK(master_weight_bytes(all_fp32) == 2.0);
  CHECK(optimizer_state_bytes_per_param(all_fp32) == 10.0);
  CHECK(optimizer_step_bytes_per_param(all_fp32, 4.0) == 28.0);
}

TEST_CASE("bf16 and fp8 moments and fp16 master weights shrink the state to their bytes",
          "[models][optimizer]") {
  // Remainders 2 + bf16 m 2 + bf16 v 2 = 6 bytes, half of fp32 Adam's 12. The step with a bf16
  // main gradient: 2 + 2·(2 + 2) + (2 + 2 + 2 + 2) = 18.
  const OptimizerPrecision bf16 = aware(StateDtype::kFp32, StateDtype::kBf16, StateDtype::kBf16);
  CHECK(optimizer_state_bytes_per_param(bf16) == 6.0);
  CHECK(optimizer_step_bytes_per_param(bf16, 2.0) == 18.0);
  // fp16 master 2 + fp8 (uint8) m 1 + fp8 v 1 = 4. The step: 2 + 2·(1 + 1) + (2·2 + 2) = 12.
  const OptimizerPrecision fp8 = aware(StateDtype::kFp16, StateDtype::kFp8, StateDtype::kFp8);
  CHECK(optimizer_state_bytes_per_param(fp8) == 4.0);
  CHECK(optimizer_step_bytes_per_param(fp8, 2.0) == 12.0);
}

TEST_CASE("a stage's optimizer bytes follow the optimizer state dtypes", "[models][optimizer]") {
  // The same stage with fp32 state (12 bytes per parameter) and with remainders and bf16
  // moments (6): half the optimizer bytes; weights and gradients do not change.
  const ModelSpec m = llama3_70b();
  TrainingSpec t = training(8192, 1, 512);
  t.distributed_optimizer = true;
  ParallelSpec p;
  p.tp = 8;
  p.pp = 4;
  const Layout layout = make_layout(m, p, t, 1024, "test");
  const StageMemory plain = memory_report(m, layout, t, 80e9).stages[0];
  t.optimizer = aware(StateDtype::kFp32, StateDtype::kBf16, StateDtype::kBf16);
  const StageMemory low = memory_report(m, layout, t, 80e9).stages[0];
  CHECK(low.optimizer == Approx(plain.optimizer / 2).epsilon(1e-12));
  CHECK(low.weights == plain.weights);
  CHECK(low.grads == plain.grads);
  CHECK(static_bytes_per_param(layout, t).optimizer == Approx(6.0 / 32));  // dp 32
}

TEST_CASE("training.optimizer reads the precision-aware optimizer's dtypes",
          "[models][optimizer][config]") {
  const RunConfig config = load_run_config(
      kExample,
      {"training.optimizer.precision_aware=true", "training.optimizer.exp_avg_dtype=bf16",
       "training.optimizer.exp_avg_sq_dtype=fp8", "training.optimizer.main_params_dtype=fp16"});
  const OptimizerPrecision& o = config.training.optimizer;
  CHECK(o.precision_aware);
  CHECK(o.main_params == StateDtype::kFp16);
  CHECK(o.exp_avg == StateDtype::kBf16);
  CHECK(o.exp_avg_sq == StateDtype::kFp8);
}

TEST_CASE("optimizer dtypes Megatron would refuse are input errors",
          "[models][optimizer][config]") {
  // Megatron asserts fp32 state without --use-precision-aware-optimizer.
  CHECK_THROWS_WITH(load_run_config(kExample, {"training.optimizer.exp_avg_dtype=bf16"}),
                    Contains("training.optimizer.exp_avg_dtype") && Contains("precision_aware"));
  CHECK_THROWS_WITH(load_run_config(kExample, {"training.optimizer.precision_aware=true",
                                               "training.optimizer.main_params_dtype=bf16"}),
                    Contains("training.optimizer.main_params_dtype") && Contains("fp32, fp16"));
  CHECK_THROWS_WITH(load_run_config(kExample, {"training.optimizer.state=bf16"}),
                    Contains("training.optimizer.state") && Contains("unknown key"));
  // FusedAdam's low-precision state lives in Megatron's distributed optimizer only.
  CHECK_THROWS_WITH(load_run_config(kExample, {"training.distributed_optimizer=false",
                                               "training.optimizer.precision_aware=true"}),
                    Contains("llama3-8b-8gpu.json") &&
                        Contains("training.optimizer.precision_aware") &&
                        Contains("distributed optimizer"));
}
