// `wallsim sweep --vary knob=v1,v2,...`: each line of the input is one assignment, applied in
// turn to the default space of a 32-layer model on 64 GPUs; whatever is accepted must give a
// space whose points can all be named (size, first and last point, description).
#include <sstream>

#include "fuzz_input.hpp"
#include "models/sweep/sweep_space.hpp"
#include "sim/core/input_error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wallsim::models::SweepSpace space = wallsim::models::default_space({32, 64, 8});
  std::istringstream lines(wallsim::fuzz::as_text(data, size));
  std::string assignment;
  while (std::getline(lines, assignment)) {
    try {
      wallsim::models::apply_vary(space, assignment);
    } catch (const wallsim::InputError&) {
    }
  }
  const std::int64_t points = space.size();
  if (points < 1) __builtin_trap();  // every knob keeps at least one value
  wallsim::models::point_id(space.at(0));
  wallsim::models::point_id(space.at(points - 1));
  wallsim::models::describe_space(space);
  return 0;
}
