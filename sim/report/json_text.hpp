// JSON string quoting for writers that stream JSON by hand (large traces).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace wallsim {

// Appends `text` as a JSON string literal, quotes included (RFC 8259 §7 escapes).
inline void append_json_quoted(std::string& quoted, std::string_view text) {
  quoted += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      quoted += escape;
    } else {
      quoted += c;
    }
  }
  quoted += '"';
}

// `text` as a JSON string literal, quotes included.
inline std::string json_quote(std::string_view text) {
  std::string quoted;
  append_json_quoted(quoted, text);
  return quoted;
}

}  // namespace wallsim
