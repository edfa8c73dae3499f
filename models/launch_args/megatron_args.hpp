// Megatron-LM's command-line arguments, read the way its argparse parser reads them
// (megatron/training/arguments.py; allow_abbrev=False, so only full option names).
//
// `--flag value`, `--flag=value` and `--flag v1 v2 …` (nargs '+'): an option takes every
// following word up to the next word that starts with "--". A repeated option keeps its last
// value, as argparse does (a warning says so). The importer asks for each option it models with
// a typed getter, which checks the value and marks the option read; what nobody read is then
// sorted by `unread_report` into the options that do not change step time or memory, those that
// do but wallsim does not model, and those it does not know.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "models/launch_args/shell_command.hpp"

namespace wallsim::models {

struct MegatronArg {
  std::string flag;               // "--num-layers"
  std::vector<ShellWord> values;  // none for a switch
  int line = 0;
};

class MegatronArgs {
 public:
  // Throws InputError (naming `source` and the line) for a word before the first option and for
  // an option name that depends on an unresolved shell variable.
  MegatronArgs(const std::vector<ShellWord>& words, std::string source);

  const std::string& source() const { return source_; }
  bool has(std::string_view flag) const { return args_.contains(flag); }

  // Getters mark the option read; each throws InputError naming the option, its value and
  // what is allowed. A value that needs an unresolved shell variable is an error here.
  bool enabled(std::string_view flag);  // a store_true switch: present, without a value
  // Integers are bounded so that products of a few of them (tp·cp·pp, micro-batch · dp) stay
  // far from overflow: 2^24 by default, 2^20 for parallel sizes (kMaxParallel).
  static constexpr std::int64_t kMaxInteger = std::int64_t{1} << 24;
  static constexpr std::int64_t kMaxParallel = std::int64_t{1} << 20;
  std::optional<std::int64_t> integer(std::string_view flag, std::int64_t min = 1,
                                      std::int64_t max = kMaxInteger);
  std::optional<double> number(std::string_view flag, double min, double max);
  std::optional<std::string> text(std::string_view flag);
  std::optional<std::string> choice(std::string_view flag,
                                    std::initializer_list<std::string_view> allowed);
  std::vector<std::string> list(std::string_view flag);  // nargs '+'; empty when absent
  void ignore(std::string_view flag) { read_.insert(std::string(flag)); }

  [[noreturn]] void fail(std::string_view flag, const std::string& value,
                         const std::string& problem) const;
  [[noreturn]] void fail(std::string_view flag, const std::string& problem) const;

  // One warning per kind of option nobody read (each naming them), one for repeated options and
  // one for unresolved shell variables in the values of options wallsim does not read.
  std::vector<std::string> unread_report() const;

 private:
  const MegatronArg& at(std::string_view flag);
  std::string single(std::string_view flag);

  std::string source_;
  std::map<std::string, MegatronArg, std::less<>> args_;
  std::set<std::string, std::less<>> read_;
  std::set<std::string> repeated_;
};

// The options wallsim knows and deliberately does not read: those that do not change step time
// or memory (learning rate, data, logging, checkpoints, …) and those that do but are not modelled
// (offloading, FSDP, FP8 parameter gather, …). Sorted; for the docs and tests.
const std::vector<std::string_view>& megatron_flags_without_effect();
const std::vector<std::string_view>& megatron_flags_not_modelled();

}  // namespace wallsim::models
