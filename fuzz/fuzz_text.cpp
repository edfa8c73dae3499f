// Text the command line takes: byte sizes and ranges ("1GiB", "1KiB:8GiB"), `--set`
// assignments, and JSON text itself.
#include "fuzz_input.hpp"
#include "sim/core/byte_size.hpp"
#include "sim/core/input_error.hpp"
#include "sim/core/json_reader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = wallsim::fuzz::as_text(data, size);
  try {
    wallsim::parse_byte_sizes(text, "--bytes");
  } catch (const wallsim::InputError&) {
  }
  try {
    nlohmann::json document = {{"training", {{"micro_batch", 1}}}};
    wallsim::apply_override(document, text);
  } catch (const wallsim::InputError&) {
  }
  try {
    wallsim::parse_json_text(text, "fuzz.json");
  } catch (const wallsim::InputError&) {
  }
  return 0;
}
