// A TorchTitan job config TOML as `wallsim import torchtitan` reads it: typed look-ups of
// `section.key` that remember what was read, errors that name the file, line and column, and the
// report of what was not read (torchtitan_import.hpp).
//
// Sections are TorchTitan's JobConfig dataclasses (torchtitan/config/job_config.py); nested ones
// are dotted ("quantize.linear.float8"). The fields TorchTitan defines for the sections wallsim
// reads are listed in torchtitan_toml.cpp, so a field that is set and not read is reported as
// not modelled, and a field TorchTitan does not define as unknown.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wallsim::models {

class TorchTitanToml {
 public:
  // Parses `text`; a TOML syntax error throws InputError naming `source`, line and column.
  TorchTitanToml(std::string_view text, std::string source);
  ~TorchTitanToml();
  TorchTitanToml(const TorchTitanToml&) = delete;
  TorchTitanToml& operator=(const TorchTitanToml&) = delete;

  // The value of `section`.`key`, marked read; nullopt when absent. A value of another TOML type
  // throws InputError naming the field and the type it must have.
  std::optional<std::int64_t> integer(const std::string& section, const std::string& key);
  std::optional<bool> boolean(const std::string& section, const std::string& key);
  std::optional<std::string> string(const std::string& section, const std::string& key);
  // An array of strings, or one string holding a comma-separated list (TorchTitan's command-line
  // form, which older train configs also use in the file).
  std::optional<std::vector<std::string>> strings(const std::string& section,
                                                  const std::string& key);
  // An array of arrays of strings (parallelism.module_fqns_per_model_part).
  std::optional<std::vector<std::vector<std::string>>> string_lists(const std::string& section,
                                                                    const std::string& key);
  bool has_section(const std::string& section) const;

  // "file:line:column" of the field (of the file when the field is absent).
  std::string where(const std::string& section, const std::string& key) const;
  // Throws InputError: where the field is, `section.key = value`, and `problem`.
  [[noreturn]] void fail(const std::string& section, const std::string& key,
                         const std::string& value, const std::string& problem) const;

  // Warnings for what was not read: per section read, the TorchTitan fields set (not false, 0
  // or empty) that wallsim does not model, and the fields TorchTitan does not define; then the
  // sections not read, and the sections TorchTitan does not define.
  std::vector<std::string> unread_report() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace wallsim::models
