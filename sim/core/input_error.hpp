// The one error type for bad user input.
//
// Every message names where the problem is (file, JSON path), the offending value and what is
// allowed, on one line, e.g.
//   configs/clusters/x.json: nvlink.bandwidth_GBps = -3: must be a number > 0
// Library code throws it; only the CLI turns it into a message and exit code 2.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace wallsim {

class InputError : public std::runtime_error {
 public:
  // `where` is a file name (or "command line"); `json_path` may be empty when the problem
  // concerns the whole input; `value` is the offending value as written (may be empty).
  InputError(const std::string& where, const std::string& json_path, const std::string& value,
             const std::string& problem);
  // A message already composed by the caller.
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

// Throws InputError naming `source` and the line of the first byte sequence that is not
// well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF). Text
// read from a file must pass before any of it is carried into JSON.
void require_utf8(std::string_view text, const std::string& source);

}  // namespace wallsim
