// Calibration profiles, and one kernel of each kind timed with the parsed GPU section.
#include "calibration/profile.hpp"
#include "fuzz_input.hpp"
#include "sim/core/input_error.hpp"
#include "sim/hw/gpu_model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto document = wallsim::fuzz::as_json(data, size);
  if (!document) return 0;
  try {
    const wallsim::Profile profile = wallsim::parse_profile(*document, "fuzz.json");
    const wallsim::GpuModel gpu(profile.gpu);
    const int sms = profile.gpu.sms;
    gpu.gemm({4096, 4096, 4096, 1}, wallsim::Dtype::kBf16, sms);
    for (const auto& [kernel, tables] : profile.gpu.attention) {
      gpu.attention_forward({1, 32, 8, 4096, 4096, 128, true}, kernel, sms);
    }
    gpu.memory_bound(1e8, sms);
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
