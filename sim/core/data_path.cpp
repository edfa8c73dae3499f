#include "sim/core/data_path.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/core/input_error.hpp"

namespace wallsim {

std::string data_root() {
  if (const char* home = std::getenv("WALLSIM_HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  return WALLSIM_SOURCE_ROOT;
}

std::optional<std::string> resolve_data_path(const std::string& reference,
                                             const std::string& referring_file) {
  namespace fs = std::filesystem;
  const fs::path ref(reference);
  std::error_code ignored;
  if (ref.is_absolute()) {
    return fs::is_regular_file(ref, ignored) ? std::optional(ref.string()) : std::nullopt;
  }
  const fs::path base =
      referring_file.empty() ? fs::current_path() : fs::path(referring_file).parent_path();
  for (const fs::path& candidate : {base / ref, fs::path(data_root()) / ref}) {
    if (fs::is_regular_file(candidate, ignored)) return candidate.lexically_normal().string();
  }
  return std::nullopt;
}

std::string read_data_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "", "cannot read the file");
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

}  // namespace wallsim
