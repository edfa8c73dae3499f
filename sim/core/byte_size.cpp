#include "sim/core/byte_size.hpp"

#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

#include "sim/core/input_error.hpp"

namespace wallsim {
namespace {

constexpr const char* kAllowed =
    "expected a positive byte count such as 1048576, 4KiB, 256MiB, 1GiB or 1GB";

std::uint64_t unit_factor(const std::string& unit) {
  static const std::array<std::pair<const char*, std::uint64_t>, 13> kUnits{{
      {"", 1},
      {"B", 1},
      {"K", 1ULL << 10},
      {"KiB", 1ULL << 10},
      {"M", 1ULL << 20},
      {"MiB", 1ULL << 20},
      {"G", 1ULL << 30},
      {"GiB", 1ULL << 30},
      {"TiB", 1ULL << 40},
      {"KB", 1000ULL},
      {"MB", 1000ULL * 1000},
      {"GB", 1000ULL * 1000 * 1000},
      {"TB", 1000ULL * 1000 * 1000 * 1000},
  }};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) return factor;
  }
  return 0;
}

}  // namespace

std::uint64_t parse_byte_size(const std::string& text, const std::string& option) {
  std::size_t pos = 0;
  while (pos < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) {
    ++pos;
  }
  const std::string number = text.substr(0, pos);
  const std::uint64_t factor = unit_factor(text.substr(pos));
  const bool has_digit = number.find_first_of("0123456789") != std::string::npos;
  if (!has_digit || factor == 0 || number.find('.') != number.rfind('.')) {
    throw InputError("command line", option, text, kAllowed);
  }
  const double value = std::stod(number) * static_cast<double>(factor);
  if (!(value >= 1) || value > 1.8e19) throw InputError("command line", option, text, kAllowed);
  return static_cast<std::uint64_t>(std::llround(value));
}

std::vector<std::uint64_t> parse_byte_sizes(const std::string& text, const std::string& option) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return {parse_byte_size(text, option)};
  const std::uint64_t first = parse_byte_size(text.substr(0, colon), option);
  const std::uint64_t last = parse_byte_size(text.substr(colon + 1), option);
  if (last < first) {
    throw InputError("command line", option, text, "range end must not be below its start");
  }
  std::vector<std::uint64_t> sizes;
  for (std::uint64_t size = first; size <= last; size *= 2) {
    sizes.push_back(size);
    if (size > last / 2) break;
  }
  return sizes;
}

std::string format_bytes(double bytes) {
  static const std::array<const char*, 5> kNames{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t unit = 0;
  while (bytes >= 1024.0 && unit + 1 < kNames.size()) {
    bytes /= 1024.0;
    ++unit;
  }
  char buffer[32];
  const bool whole = std::fabs(bytes - std::round(bytes)) < 1e-9;
  std::snprintf(buffer, sizeof buffer, whole ? "%.0f %s" : "%.2f %s", bytes, kNames[unit]);
  return buffer;
}

}  // namespace wallsim
