#include "sim/core/input_error.hpp"

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

}  // namespace

InputError::InputError(const std::string& where, const std::string& json_path,
                       const std::string& value, const std::string& problem)
    : std::runtime_error(compose(where, json_path, value, problem)) {}

}  // namespace wallsim
