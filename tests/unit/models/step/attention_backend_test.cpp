// training.attention_backend: parsing, the Transformer Engine default per GPU and head dims
// (models/step/attention_backend_choice.hpp), refusals, and the kernel that times a run.
#include <catch2/catch.hpp>

#include "models/step/attention_backend_choice.hpp"
#include "sim/core/input_error.hpp"
#include "step_test_support.hpp"

using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json with_training(const std::string& key, const json& value) {
  json doc = base_config();
  doc["training"][key] = value;
  return doc;
}

// Duration of the first forward attention op of a one-layer build.
Time first_attention(const json& doc) {
  json one = doc;
  one["model"]["layers"] = 1;
  return first_duration(build(one).graphs[0], "attn fwd");
}

}  // namespace

TEST_CASE("attention_backend parses to a backend, flash_attention false is unfused",
          "[models][attention]") {
  CHECK(config_from(with_training("attention_backend", "flash3")).training.attention_backend ==
        AttentionBackend::kFlash3);
  const RunConfig unfused = config_from(with_training("flash_attention", false));
  CHECK(unfused.training.attention_backend == AttentionBackend::kUnfused);
  CHECK_FALSE(unfused.training.flash_attention);
  CHECK_FALSE(config_from(base_config()).training.attention_backend);
}

TEST_CASE("attention_backend refuses unknown names and contradictions", "[models][attention]") {
  CHECK_THROWS_WITH(config_from(with_training("attention_backend", "flash4")),
                    Contains("training.attention_backend") && Contains("flash4") &&
                        Contains("cudnn") && Contains("unfused"));
  json fused_but_off = with_training("attention_backend", "cudnn");
  fused_but_off["training"]["flash_attention"] = false;
  CHECK_THROWS_WITH(config_from(fused_but_off), Contains("contradicts training.flash_attention"));
  json unfused_but_on = with_training("attention_backend", "unfused");
  unfused_but_on["training"]["flash_attention"] = true;
  CHECK_THROWS_AS(config_from(unfused_but_on), InputError);
  json agreeing = with_training("attention_backend", "unfused");
  agreeing["training"]["flash_attention"] = false;
  CHECK_NOTHROW(config_from(agreeing));
}

TEST_CASE("the default is cuDNN on sm90 within TE 1.3's head dims, FlashAttention-2 otherwise",
          "[models][attention]") {
  // kernels.md B4: TE >= 1.2 prefers cuDNN fused attention on sm90 when it is eligible (TE 1.3:
  // head dims <= 128, multiples of 8), flash-attn elsewhere.
  CHECK(default_attention_backend(90, {128, 128}) == AttentionBackend::kCudnn);
  CHECK(default_attention_backend(90, {64, 64}) == AttentionBackend::kCudnn);
  CHECK(default_attention_backend(90, {256, 256}) == AttentionBackend::kFlash2);
  CHECK(default_attention_backend(90, {192, 128}) == AttentionBackend::kFlash2);  // MLA
  CHECK(default_attention_backend(90, {100, 100}) == AttentionBackend::kFlash2);  // not % 8
  CHECK(default_attention_backend(80, {128, 128}) == AttentionBackend::kFlash2);
}

TEST_CASE("on Blackwell the default is cuDNN, MLA's 192 and 128 head dims included",
          "[models][attention]") {
  // docs/reference/blackwell.md §5: TE prefers FusedAttention at compute capability >= 9.0, and
  // cuDNN >= 9.11 trains d_qk = 192, d_v = 128 on sm_100 and later (sm_103 is B300/GB300).
  CHECK(default_attention_backend(100, {128, 128}) == AttentionBackend::kCudnn);
  CHECK(default_attention_backend(103, {64, 64}) == AttentionBackend::kCudnn);
  CHECK(default_attention_backend(100, {192, 128}) == AttentionBackend::kCudnn);  // MLA
  CHECK(default_attention_backend(103, {192, 128}) == AttentionBackend::kCudnn);
  CHECK(default_attention_backend(100, {256, 256}) == AttentionBackend::kFlash2);
  CHECK(default_attention_backend(100, {192, 192}) == AttentionBackend::kFlash2);
}

TEST_CASE("a backend the profile has no tables for names the profile and what it has",
          "[models][attention]") {
  json doc = with_training("attention_backend", "cudnn");
  doc["cluster"] = "../clusters/dgx-a100.json";
  const RunConfig config = config_from(doc);
  const GpuProfile a100 = [] {
    const std::string file =
        std::string(WALLSIM_SOURCE_ROOT) + "/calibration/profiles/a100-sxm-80gb.json";
    return parse_gpu_profile(JsonNode(load_json_file(file).at("gpu"), file, "gpu"));
  }();
  CHECK_THROWS_WITH(resolve_attention_backend(config.training, config.model, a100, config.file),
                    Contains("training.attention_backend") && Contains("a100-sxm-80gb.json") &&
                        Contains("backends it has: flash2"));
  CHECK(resolve_attention_backend(config_from(base_config()).training, config.model, a100,
                                  config.file) == AttentionBackend::kFlash2);
}

TEST_CASE("the run's backend picks the tables that time its attention", "[models][attention]") {
  // base_config on H100, d = 64: one causal call of 8 heads over s = 2048 per TP rank.
  const AttentionShape call{1, 8, 2, 2048, 2048, 64, true};
  const int sms = h100().profile().sms;
  CHECK(first_attention(base_config()) ==
        h100().attention_forward(call, AttentionKernel::kCudnn, sms));
  CHECK(first_attention(with_training("attention_backend", "flash3")) ==
        h100().attention_forward(call, AttentionKernel::kFlash3, sms));
  CHECK(first_attention(with_training("attention_backend", "flash2")) ==
        h100().attention_forward(call, AttentionKernel::kFlash2, sms));
}
