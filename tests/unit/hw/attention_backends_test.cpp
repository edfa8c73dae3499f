// The shipped profiles' attention tables per kernel (kernels.md B1 and B2, copied with their
// sources into docs/reference/attention.md), the derived causal backward rule, and the
// cross-check against Megatron-Core's measured cuDNN attention throughput.
#include <cmath>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "shipped_profile.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"
#include "sim/hw/gpu_model.hpp"

using namespace wallsim;
using Catch::Matchers::Contains;

namespace {

constexpr double kTera = 1e12;

double rate(const GpuProfile& gpu, AttentionKernel kernel, AttentionPass pass, bool causal,
            double head_dim, double seq) {
  return gpu.attention_tables(kernel).achieved_flops(pass, causal, head_dim, seq) / kTera;
}

}  // namespace

TEST_CASE("Hopper profiles carry cuDNN, FA3 and FA2 tables, the A100 profile FA2 alone",
          "[hw][attention]") {
  const auto fwd = AttentionPass::kForward, bwd = AttentionPass::kBackward;
  for (const char* name : {"h100-sxm", "h200-sxm"}) {
    const GpuProfile gpu = test::load_shipped_gpu(name);
    CHECK(gpu.compute_capability == 90);
    CHECK(gpu.attention_kernel_list() == "cudnn, flash2, flash3");
    // kernels.md B1, hdim 128 at 16k: cuDNN fwd 595 / causal 539, bwd 516 (H100's tables; the
    // H200's cuDNN tables are measured, below); FA3 648 / 616, 561; FA2 370 / 335, 322 TFLOP/s.
    if (std::string(name) == "h100-sxm") {
      CHECK(rate(gpu, AttentionKernel::kCudnn, fwd, false, 128, 16384) == Approx(595));
      CHECK(rate(gpu, AttentionKernel::kCudnn, fwd, true, 128, 16384) == Approx(539));
      CHECK(rate(gpu, AttentionKernel::kCudnn, bwd, false, 128, 16384) == Approx(516));
    }
    CHECK(rate(gpu, AttentionKernel::kFlash3, fwd, false, 128, 16384) == Approx(648));
    CHECK(rate(gpu, AttentionKernel::kFlash3, fwd, true, 128, 16384) == Approx(616));
    CHECK(rate(gpu, AttentionKernel::kFlash2, bwd, false, 128, 16384) == Approx(322));
  }
  // The H200's cuDNN tables are its measurements (calibration/measured/h200-sxm/
  // attn_torch_cudnn.raw.json, batch 1, 32 heads, hdim 128, seq 16384): forward 6.41251 ms for
  // 4 * 32 * 16384^2 * 128 = 4.398e12 FLOP, after the fitted 0.673 us launch gap 685.9 TFLOP/s;
  // causal 3.36621 ms for half of it, 653.4; backward 21.0705 ms for 2.5x, 521.8. And at 128k
  // (8 heads) the causal forward is 63.143 ms for 2 * 8 * 131072^2 * 128: 557.2 TFLOP/s.
  const GpuProfile h200 = test::load_shipped_gpu("h200-sxm");
  CHECK(rate(h200, AttentionKernel::kCudnn, fwd, false, 128, 16384) == Approx(685.9).epsilon(1e-3));
  CHECK(rate(h200, AttentionKernel::kCudnn, fwd, true, 128, 16384) == Approx(653.4).epsilon(1e-3));
  CHECK(rate(h200, AttentionKernel::kCudnn, bwd, false, 128, 16384) == Approx(521.8).epsilon(1e-3));
  CHECK(rate(h200, AttentionKernel::kCudnn, fwd, true, 128, 131072) == Approx(557.2).epsilon(1e-3));

  const GpuProfile a100 = test::load_shipped_gpu("a100-sxm-80gb");
  CHECK(a100.compute_capability == 80);
  CHECK(a100.attention_kernel_list() == "flash2");
  // kernels.md B2 (FA2 paper, A100, seq 16k, hdim 128): fwd 223 / causal 197, bwd 196 / 186.
  CHECK(rate(a100, AttentionKernel::kFlash2, AttentionPass::kForward, false, 128, 16384) ==
        Approx(223));
  CHECK(rate(a100, AttentionKernel::kFlash2, AttentionPass::kBackward, true, 128, 16384) ==
        Approx(186));
}

TEST_CASE("the causal backward is the non-causal backward times the forward's causal ratio",
          "[hw][attention]") {
  // No causal backward is published for H100 (kernels.md B1): each backend's causal backward
  // table is derived as bwd(d, s) · fwd_causal(d, s) / fwd(d, s), rounded to 0.1 TFLOP/s.
  // cuDNN, hdim 128, 8k: 518 · 529 / 600 = 456.7.
  const GpuProfile h100 = test::load_shipped_gpu("h100-sxm");
  const auto fwd = AttentionPass::kForward, bwd = AttentionPass::kBackward;
  CHECK(rate(h100, AttentionKernel::kCudnn, bwd, true, 128, 8192) == Approx(456.7));
  for (AttentionKernel kernel : kAttentionKernels) {
    for (double d : {64.0, 128.0}) {
      for (double s : {512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0}) {
        CAPTURE(attention_kernel_name(kernel), d, s);
        const double derived = rate(h100, kernel, bwd, false, d, s) *
                               rate(h100, kernel, fwd, true, d, s) /
                               rate(h100, kernel, fwd, false, d, s);
        CHECK(rate(h100, kernel, bwd, true, d, s) == Approx(derived).margin(0.05));
      }
    }
  }
}

TEST_CASE("beyond the published 16k the tables read their last point", "[hw][attention]") {
  // kernels.md B1: the curves change by at most 2% from 8k to 16k; nothing is published
  // beyond, so 32k and 128k read the 16k value.
  const GpuProfile h100 = test::load_shipped_gpu("h100-sxm");
  for (double s : {32768.0, 131072.0}) {
    CHECK(rate(h100, AttentionKernel::kCudnn, AttentionPass::kForward, true, 128, s) ==
          Approx(539));
  }
}

TEST_CASE("cuDNN tables agree with Megatron-Core's measured MLA attention within 20%",
          "[hw][attention][validation]") {
  // MCore Table 9 (moe_walls.md A6): cuDNN SDPA for DeepSeek-V3's MLA on Hopper, causal,
  // 4K fwd 553 / bwd 422, 16K fwd 638 / bwd 523 TFLOP/s. wallsim times MLA as one call of
  // head dim (192 + 128)/2 = 160, the same FLOPs (models/step/step_context.cpp), so the
  // tables are read at d = 160: forward interpolated in log2(d) between the 128 and 256
  // tables, backward at the 128 table (none published above it).
  // Tolerance 20%: the B1 cuDNN rows are a mid-2024 cuDNN and MCore's a 2025 one (cuDNN 9
  // release notes report up to 50% between versions on Hopper, kernels.md B4); MLA's 192/128
  // split is not a square head dim; and the causal backward is derived. 20% still separates
  // the cuDNN class from FA2 (335 TFLOP/s causal forward at 16k, 47% below 638).
  const GpuProfile h100 = test::load_shipped_gpu("h100-sxm");
  struct Row {
    double seq, forward, backward;
  };
  for (const Row row : {Row{4096, 553, 422}, Row{16384, 638, 523}}) {
    CAPTURE(row.seq);
    const double fwd =
        rate(h100, AttentionKernel::kCudnn, AttentionPass::kForward, true, 160, row.seq);
    const double bwd =
        rate(h100, AttentionKernel::kCudnn, AttentionPass::kBackward, true, 160, row.seq);
    CHECK(std::abs(fwd / row.forward - 1.0) < 0.20);
    CHECK(std::abs(bwd / row.backward - 1.0) < 0.20);
  }
  CHECK_FALSE(
      std::abs(rate(h100, AttentionKernel::kFlash2, AttentionPass::kForward, true, 160, 16384) /
                   638.0 -
               1.0) < 0.20);
}

TEST_CASE("a kernel the profile lacks is refused naming the profile and its kernels",
          "[hw][attention]") {
  const GpuModel a100(test::load_shipped_gpu("a100-sxm-80gb"));
  const AttentionShape shape{1, 16, 16, 4096, 4096, 128, true};
  CHECK_THROWS_WITH(
      a100.attention_forward(shape, AttentionKernel::kCudnn, 108),
      Contains("gpu.attention.backends.cudnn") && Contains("backends this profile has: flash2"));
}

TEST_CASE("an unknown attention backend in a profile is rejected with its path",
          "[hw][attention]") {
  auto gpu = load_json_file(test::shipped_profile_file("h100-sxm")).at("gpu");
  gpu["attention"]["backends"]["flash4"] = gpu["attention"]["backends"]["flash3"];
  CHECK_THROWS_WITH(parse_gpu_profile(JsonNode(gpu, "test.json", "gpu")),
                    Contains("gpu.attention.backends.flash4"));
  auto none = load_json_file(test::shipped_profile_file("h100-sxm")).at("gpu");
  none["attention"]["backends"] = nlohmann::json::object();
  CHECK_THROWS_WITH(parse_gpu_profile(JsonNode(none, "test.json", "gpu")),
                    Contains("at least one of cudnn, flash2, flash3"));
}
