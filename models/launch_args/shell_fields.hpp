// The fields (words) one shell token expands to, with the shell's word splitting: unquoted text
// from an expansion splits at blanks, quoted text does not (part of shell_command.cpp's model).
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "models/launch_args/shell_command.hpp"

namespace wallsim::models {

// Collects the fields (words) one token expands to.
class FieldBuilder {
 public:
  explicit FieldBuilder(int line) : line_(line) {}
  void append(const std::string& text) {
    if (!open_) fields_.push_back(ShellWord{"", {}, line_});
    fields_.back().text += text;
    open_ = true;
  }
  void mark(const std::string& what) {
    if (fields_.empty()) append("");
    fields_.back().unresolved.push_back(what);
  }
  void cut() { open_ = false; }
  // Unquoted: split at blanks, a leading or trailing blank cutting the field.
  void append_split(const std::string& text) {
    std::size_t i = 0;
    while (i < text.size()) {
      if (text[i] == ' ' || text[i] == '\t' || text[i] == '\n') {
        cut();
        ++i;
        continue;
      }
      const std::size_t end = std::min(text.find_first_of(" \t\n", i), text.size());
      append(text.substr(i, end - i));
      i = end;
    }
  }
  std::vector<ShellWord> take() { return std::move(fields_); }

 private:
  int line_;
  bool open_ = false;
  std::vector<ShellWord> fields_;
};

}  // namespace wallsim::models
