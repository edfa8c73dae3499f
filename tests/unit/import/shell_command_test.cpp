#include "models/launch_args/shell_command.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "sim/core/input_error.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

std::vector<std::string> texts(const std::vector<ShellWord>& words) {
  std::vector<std::string> out;
  for (const auto& word : words) out.push_back(word.text);
  return out;
}

}  // namespace

TEST_CASE("debug mixtral") {
  (void)texts;
  std::ifstream in(std::string(WALLSIM_SOURCE_ROOT) + "/tests/data/megatron_args/train_mixtral_8x7b_distributed.sh");
  std::stringstream s; s << in.rdbuf();
  auto launch = read_launch_command(s.str(), "x");
  for (auto& n : launch.notes) WARN(n);
  WARN(launch.script);
  for (auto& w : launch.arguments) WARN(w.text);
}
