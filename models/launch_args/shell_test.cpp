#include "models/launch_args/shell_test.hpp"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <string_view>

namespace wallsim::models {
namespace {

bool one_of(const std::string& word, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

std::optional<long long> integer(const std::string& text) {
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Recursive descent over the words: or := and (|| and)*; and := not (&& not)*;
// not := ! not | primary; primary := ( or ) | unary word | word binary word | word.
class TestParser {
 public:
  TestParser(const std::vector<TestWord>& words, bool double_bracket, std::string& why)
      : words_(words), double_bracket_(double_bracket), why_(why) {}

  std::optional<bool> whole() {
    auto value = disjunction();
    if (value && pos_ != words_.size()) return unknown("'" + words_[pos_].text + "' is unexpected");
    return value;
  }

 private:
  std::optional<bool> unknown(const std::string& why) {
    if (why_.empty()) why_ = why;
    pos_ = words_.size();
    return std::nullopt;
  }
  bool at(std::initializer_list<std::string_view> ops) const {
    return pos_ < words_.size() && one_of(words_[pos_].text, ops);
  }
  bool at_and() const { return at({"-a"}) || (at({"&&"}) && words_[pos_].operator_token); }
  bool at_or() const { return at({"-o"}) || (at({"||"}) && words_[pos_].operator_token); }

  // Both sides are always parsed; a side that cannot be evaluated decides only when needed.
  std::optional<bool> disjunction() {
    auto value = conjunction();
    while (at_or()) {
      ++pos_;
      auto right = conjunction();
      if (value == true || right == true) {
        value = true;
      } else if (!value || !right) {
        return std::nullopt;
      }
    }
    return value;
  }

  std::optional<bool> conjunction() {
    auto value = negation();
    while (at_and()) {
      ++pos_;
      auto right = negation();
      if (value == false || right == false) {
        value = false;
      } else if (!value || !right) {
        return std::nullopt;
      }
    }
    return value;
  }

  std::optional<bool> negation() {
    if (at({"!"}) && pos_ + 1 < words_.size()) {
      ++pos_;
      auto value = negation();
      return value ? std::optional<bool>(!*value) : std::nullopt;
    }
    return primary();
  }

  std::optional<std::string> operand() {
    if (pos_ >= words_.size()) return unknown("an operand is missing"), std::nullopt;
    const TestWord& word = words_[pos_++];
    if (!word.unresolved.empty()) return unknown("needs " + word.unresolved), std::nullopt;
    return word.text;
  }

  std::optional<bool> primary() {
    if (at({"("})) {
      ++pos_;
      auto value = disjunction();
      if (!at({")"})) return unknown("')' expected");
      ++pos_;
      return value;
    }
    if (pos_ + 1 < words_.size() && at({"-n", "-z"})) {
      const bool empty_test = words_[pos_++].text == "-z";
      const auto text = operand();
      if (!text) return std::nullopt;
      return empty_test == text->empty();
    }
    if (pos_ + 1 < words_.size() &&
        at({"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r",
            "-s", "-t", "-u", "-w", "-x", "-G", "-L", "-N", "-O", "-S", "-v"})) {
      return unknown("tests " + words_[pos_ + 1].text + " with " + words_[pos_].text +
                     ", which only the machine that runs the script can answer");
    }
    const auto left = operand();
    if (!left) return std::nullopt;
    if (pos_ + 1 < words_.size() && !at_and() && !at_or() && !at({")"})) {
      const std::string op = words_[pos_++].text;
      const auto right = operand();
      if (!right) return std::nullopt;
      return binary(*left, op, *right);
    }
    return !left->empty();
  }

  std::optional<bool> binary(const std::string& left, const std::string& op,
                             const std::string& right) {
    if (one_of(op, {"=", "==", "!="})) {
      if (double_bracket_ && right.find_first_of("*?[") != std::string::npos) {
        return unknown("the pattern " + right + " is not matched");
      }
      return (left == right) == (op != "!=");
    }
    if (op == "<" || op == ">") return op == "<" ? left < right : left > right;
    const auto a = integer(left);
    const auto b = integer(right);
    if (!a || !b)
      return unknown(left + " " + op + " " + right + " is not a comparison of integers");
    if (op == "-eq") return *a == *b;
    if (op == "-ne") return *a != *b;
    if (op == "-lt") return *a < *b;
    if (op == "-le") return *a <= *b;
    if (op == "-gt") return *a > *b;
    if (op == "-ge") return *a >= *b;
    return unknown("the operator " + op + " is not evaluated");
  }

  const std::vector<TestWord>& words_;
  bool double_bracket_;
  std::string& why_;
  std::size_t pos_ = 0;
};

}  // namespace

std::optional<bool> evaluate_test(const std::vector<TestWord>& words, bool double_bracket,
                                  std::string& why) {
  if (words.empty()) return false;  // `[ ]` is false
  return TestParser(words, double_bracket, why).whole();
}

}  // namespace wallsim::models
