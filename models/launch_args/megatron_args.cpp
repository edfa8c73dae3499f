#include "models/launch_args/megatron_args.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

bool listed(const std::vector<std::string_view>& table, std::string_view flag) {
  return std::binary_search(table.begin(), table.end(), flag);
}

std::string unresolved_text(const ShellWord& word) {
  std::string text;
  for (const auto& what : word.unresolved) text += (text.empty() ? "" : ", ") + what;
  return text;
}

}  // namespace

MegatronArgs::MegatronArgs(const std::vector<ShellWord>& words, std::string source)
    : source_(std::move(source)) {
  MegatronArg* current = nullptr;
  for (const ShellWord& word : words) {
    const std::string where = source_ + ":" + std::to_string(word.line);
    if (!word.text.starts_with("--")) {
      if (!current) {
        throw InputError(where, "", word.text,
                         "not an option: the training arguments must start with one");
      }
      current->values.push_back(word);
      continue;
    }
    const std::size_t eq = word.text.find('=');
    const std::string flag = word.text.substr(0, eq);
    if (!word.unresolved.empty() && (eq == std::string::npos || flag.find('$') != flag.npos)) {
      throw InputError(
          where, "", word.text,
          "the option name needs " + unresolved_text(word) + ", which the file does not set");
    }
    if (args_.contains(flag)) repeated_.insert(flag);
    current = &(args_[flag] = MegatronArg{flag, {}, word.line});
    if (eq != std::string::npos) {
      current->values.push_back(ShellWord{word.text.substr(eq + 1), word.unresolved, word.line});
    }
  }
}

const MegatronArg& MegatronArgs::at(std::string_view flag) {
  read_.insert(std::string(flag));
  const MegatronArg& arg = args_.find(flag)->second;
  for (const ShellWord& value : arg.values) {
    if (!value.unresolved.empty()) {
      fail(flag, value.text,
           "needs " + unresolved_text(value) +
               ", which the file does not set (set it before the launch line, or give the "
               "expanded arguments)");
    }
  }
  return arg;
}

void MegatronArgs::fail(std::string_view flag, const std::string& value,
                        const std::string& problem) const {
  const auto it = args_.find(flag);
  const std::string where =
      it == args_.end() ? source_ : source_ + ":" + std::to_string(it->second.line);
  throw InputError(where, std::string(flag), value, problem);
}

void MegatronArgs::fail(std::string_view flag, const std::string& problem) const {
  fail(flag, "", problem);
}

std::string MegatronArgs::single(std::string_view flag) {
  const MegatronArg& arg = at(flag);
  if (arg.values.size() != 1) {
    fail(flag, std::to_string(arg.values.size()) + " values given: takes exactly one");
  }
  return arg.values[0].text;
}

bool MegatronArgs::enabled(std::string_view flag) {
  if (!has(flag)) {
    read_.insert(std::string(flag));
    return false;
  }
  const MegatronArg& arg = at(flag);
  if (!arg.values.empty()) fail(flag, arg.values[0].text, "is a switch and takes no value");
  return true;
}

std::optional<std::int64_t> MegatronArgs::integer(std::string_view flag, std::int64_t min,
                                                  std::int64_t max) {
  read_.insert(std::string(flag));
  if (!has(flag)) return std::nullopt;
  const std::string value = single(flag);
  std::int64_t parsed = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (error != std::errc() || end != value.data() + value.size() || parsed < min || parsed > max) {
    fail(flag, value,
         "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
  }
  return parsed;
}

std::optional<double> MegatronArgs::number(std::string_view flag, double min, double max) {
  read_.insert(std::string(flag));
  if (!has(flag)) return std::nullopt;
  const std::string value = single(flag);
  std::size_t used = 0;
  double parsed = 0;
  try {
    parsed = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || !std::isfinite(parsed) || parsed < min || parsed > max) {
    fail(flag, value,
         "must be a number in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return parsed;
}

std::optional<std::string> MegatronArgs::text(std::string_view flag) {
  read_.insert(std::string(flag));
  if (!has(flag)) return std::nullopt;
  return single(flag);
}

std::optional<std::string> MegatronArgs::choice(std::string_view flag,
                                                std::initializer_list<std::string_view> allowed) {
  auto value = text(flag);
  if (!value) return value;
  if (std::find(allowed.begin(), allowed.end(), *value) == allowed.end()) {
    std::string names;
    for (auto name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
    fail(flag, *value, "must be one of " + names);
  }
  return value;
}

std::vector<std::string> MegatronArgs::list(std::string_view flag) {
  read_.insert(std::string(flag));
  if (!has(flag)) return {};
  std::vector<std::string> values;
  for (const ShellWord& value : at(flag).values) values.push_back(value.text);
  if (values.empty()) fail(flag, "needs at least one value");
  return values;
}

std::vector<std::string> MegatronArgs::unread_report() const {
  std::vector<std::string> no_effect, not_modelled, unknown, unresolved;
  for (const auto& [flag, arg] : args_) {
    if (read_.contains(flag)) continue;
    if (listed(megatron_flags_without_effect(), flag)) {
      no_effect.push_back(flag);
    } else if (listed(megatron_flags_not_modelled(), flag)) {
      not_modelled.push_back(flag);
    } else {
      unknown.push_back(flag);
    }
    for (const ShellWord& value : arg.values) {
      if (!value.unresolved.empty()) unresolved.push_back(flag + " " + value.text);
    }
  }
  std::vector<std::string> report;
  if (!not_modelled.empty()) {
    report.push_back("not modelled (they change step time or memory, wallsim ignores them): " +
                     joined(not_modelled));
  }
  if (!unknown.empty()) report.push_back("unknown to wallsim, ignored: " + joined(unknown));
  if (!no_effect.empty()) {
    report.push_back("ignored (no effect on step time or memory): " + joined(no_effect));
  }
  if (!repeated_.empty()) {
    report.push_back("given more than once, the last value applies (as argparse does): " +
                     joined({repeated_.begin(), repeated_.end()}));
  }
  if (!unresolved.empty()) {
    report.push_back("unresolved shell variables, in values wallsim does not read: " +
                     joined(unresolved));
  }
  return report;
}

}  // namespace wallsim::models
