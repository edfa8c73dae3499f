// Predicted memory against measured allocations: SimuMax's v1.2 B200 release measured, for each
// Megatron-LM run on one 8x B200 node, the largest torch max_allocated over the ranks
// (MooreThreads/SimuMax@4dcaae5 docs/b200/b200_release_v1.2_summary.json; the rows are copied in
// docs/reference/simumax_b200.csv, their run configs are configs/validation/simumax_b200_*.json).
// max_allocated counts the tensors PyTorch's allocator hands out, not the CUDA context, NCCL's
// buffers or the allocator's slack, so it is compared with wallsim's tracked bytes of the most
// loaded stage: weights + grads + optimizer state + activations (models/memory.hpp), without
// `buffers`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "models/memory.hpp"
#include "models/run_config.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

struct Measured {
  const char* id;  // configs/validation/<id>.json
  double alloc_GiB;
};

double tracked_GiB(const std::string& id) {
  const RunConfig config =
      load_run_config(std::string(WALLSIM_SOURCE_ROOT) + "/configs/validation/" + id + ".json");
  const MemoryReport report =
      memory_report(config.model, config.layout, config.training, 180 * kGiB);
  double most = 0;
  for (const StageMemory& s : report.stages) {
    most = std::max(most, s.weights + s.grads + s.optimizer + s.activations);
  }
  return most / kGiB;
}

double check_rows(std::initializer_list<Measured> rows, double tolerance) {
  double worst = 0;
  for (const Measured& row : rows) {
    const double predicted = tracked_GiB(row.id);
    const double error = predicted / row.alloc_GiB - 1;
    std::printf("%-62s predicted %7.2f GiB, measured %7.2f GiB (%+.1f%%)\n", row.id, predicted,
                row.alloc_GiB, 100 * error);
    INFO(row.id);
    CHECK(std::fabs(error) <= tolerance);
    worst = std::max(worst, std::fabs(error));
  }
  return worst;
}

}  // namespace

TEST_CASE("Llama 3 70B layers on 8 B200 allocate what wallsim tracks, within 5%",
          "[validation][memory]") {
  // The allocations of these runs are what wallsim tracks: bf16 weights, fp32 main grads, the
  // distributed optimizer's fp32 state, activations of 1F1B without recompute (CP chunks
  // included), the output layer's kept logits.
  check_rows({{"simumax_b200_llama3_70b_l12_tp1_pp2_dp4_mbc4_cef", 66.55},
              {"simumax_b200_llama3_70b_tp2_pp1_dp4_l12_mbc4_cef", 60.68},
              {"simumax_b200_llama3_70b_l12_tp4_pp1_dp2_mbc4_cef", 39.07},
              {"simumax_b200_llama3_70b_l12_tp8_pp1_dp1_mbc4_cef", 28.29},
              {"simumax_b200_llama3_70b_l12_tp2_cp4_pp1_dp1_seq32768_mbc4_cef", 68.43},
              {"simumax_b200_llama3_70b_l12_tp1_cp8_pp1_dp1_seq32768_mbc4_cef", 104.51},
              {"simumax_b200_llama3_70b_l12_tp2_cp4_pp1_dp1_seq131072_mbc4_cef", 112.67},
              {"simumax_b200_llama3_70b_l12_tp1_cp8_pp1_dp1_seq131072_mbc4_cef", 147.99}},
             0.05);
}

TEST_CASE("four Llama 3 405B-shaped layers on 8 B200 allocate up to 10% more than tracked",
          "[validation][memory]") {
  // wallsim is 4-9% low here, a cause not pinned down: with four 16384-wide layers the
  // embedding, the output layer and the loss hold a larger share of the rank than in any 70B
  // row, so an allocation of theirs that wallsim misses (a transient of the loss kernels beyond
  // the logits it keeps, say) shows most here. The bound is wider for that reason.
  check_rows({{"simumax_b200_llama3_405b_l4_tp1_pp2_dp4_mbc4_cef", 87.08},
              {"simumax_b200_llama3_405b_l4_tp2_pp1_dp4_mbc4_cef", 81.59},
              {"simumax_b200_llama3_405b_l4_tp4_pp1_dp2_mbc4_cef", 52.89},
              {"simumax_b200_llama3_405b_l4_tp8_pp1_dp1_mbc4_cef", 38.57},
              {"simumax_b200_llama3_405b_l4_tp2_cp4_pp1_dp1_seq32768_mbc4_cef", 87.03},
              {"simumax_b200_llama3_405b_l4_tp1_cp8_pp1_dp1_seq32768_mbc4_cef", 139.22},
              {"simumax_b200_llama3_405b_l4_tp2_cp4_pp1_dp1_seq131072_mbc4_cef", 118.13}},
             0.10);
}
