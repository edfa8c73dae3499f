// The one error type for bad user input.
//
// Every message names where the problem is (file, JSON path), the offending value and what is
// allowed, on one line, e.g.
//   configs/clusters/x.json: nvlink.bandwidth_GBps = -3: must be a number > 0
// Library code throws it; only the CLI turns it into a message and exit code 2.
#pragma once

#include <stdexcept>
#include <string>

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

}  // namespace wallsim
