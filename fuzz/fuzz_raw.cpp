// Raw calibration files written by the benches.
#include "calibration/raw/raw_data.hpp"
#include "fuzz_input.hpp"
#include "sim/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto document = wallsim::fuzz::as_json(data, size);
  if (!document) return 0;
  try {
    wallsim::parse_raw_file(*document, "fuzz.raw.json");
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
