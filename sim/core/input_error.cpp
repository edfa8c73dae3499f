#include "sim/core/input_error.hpp"

#include <cstddef>
#include <cstdint>

namespace wallsim {
namespace {

std::string compose(const std::string& where, const std::string& json_path,
                    const std::string& value, const std::string& problem) {
  std::string message = where.empty() ? std::string("input") : where;
  if (!json_path.empty()) message += ": " + json_path;
  if (!value.empty()) message += (json_path.empty() ? ": " : " = ") + value;
  message += ": " + problem;
  return message;
}

// The length of the well-formed UTF-8 sequence at `text[i]`, or 0 when there is none
// (RFC 3629 table 3-7 of Unicode: the second byte's range depends on the first).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
  const std::uint8_t lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  std::uint8_t low = 0x80;
  std::uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

void require_utf8(std::string_view text, const std::string& source) {
  int line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = sequence_length(text, i);
    if (length == 0) {
      throw InputError(source + ":" + std::to_string(line), "", "",
                       "the text is not UTF-8 (byte " + std::to_string(i + 1) + ")");
    }
    if (text[i] == '\n') ++line;
    i += length;
  }
}

InputError::InputError(const std::string& where, const std::string& json_path,
                       const std::string& value, const std::string& problem)
    : std::runtime_error(compose(where, json_path, value, problem)) {}

}  // namespace wallsim
