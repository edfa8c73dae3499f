// Shared helpers for the fuzz targets: the contract every parser must keep is that any input
// either parses or throws InputError. Any other exception escapes and libFuzzer reports it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace wallsim::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Inputs that are not JSON are rejected before the parser under test sees them (that path is
// covered by the JSON reader's own target).
inline std::optional<nlohmann::json> as_json(const std::uint8_t* data, std::size_t size) {
  nlohmann::json document = nlohmann::json::parse(as_text(data, size), nullptr, false);
  if (document.is_discarded()) return std::nullopt;
  return document;
}

}  // namespace wallsim::fuzz
