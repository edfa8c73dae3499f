#include "models/launch_args/shell_test.hpp"

#include <catch2/catch.hpp>

using namespace wallsim::models;

namespace {

// Splits on spaces; "&&" and "||" are the operator tokens [[ … ]] holds.
std::optional<bool> test(const std::string& expression, bool double_bracket = true) {
  std::vector<TestWord> words;
  std::size_t start = 0;
  while (start < expression.size()) {
    std::size_t end = expression.find(' ', start);
    if (end == std::string::npos) end = expression.size();
    const std::string word = expression.substr(start, end - start);
    const bool op = word == "&&" || word == "||";
    words.push_back({word == "''" ? "" : word, word.starts_with("$") ? word : "", op});
    start = end + 1;
  }
  std::string why;
  return evaluate_test(words, double_bracket, why);
}

}  // namespace

TEST_CASE("string, integer and emptiness tests follow bash") {
  CHECK(test("fp8 == fp8") == true);
  CHECK(test("fp8 = bf16") == false);
  CHECK(test("fp8 != bf16") == true);
  CHECK(test("-n x") == true);
  CHECK(test("-z ''") == true);
  CHECK(test("''") == false);
  CHECK(test("x") == true);
  CHECK(test("8 -gt 2") == true);
  CHECK(test("2 -ge 3") == false);
  CHECK(test("1 -eq 1") == true);
  CHECK(test("a < b") == true);
}

TEST_CASE("negation, grouping and the and-or operators combine tests") {
  CHECK(test("! a = b") == true);
  CHECK(test("a = a && b = c") == false);
  CHECK(test("a = b || b = b") == true);
  CHECK(test("( a = b || c = c ) && x", true) == true);
  CHECK(test("a = a -a 1 -eq 2", false) == false);
  CHECK(test("a = b -o 1 -eq 1", false) == true);
}

TEST_CASE("tests that need what the script does not know are not evaluated") {
  CHECK_FALSE(test("-f pretrain_gpt.py").has_value());
  CHECK_FALSE(test("$UNSET == x").has_value());
  CHECK_FALSE(test("x == f*").has_value());  // a pattern inside [[ ]]
  CHECK_FALSE(test("x -gt 2").has_value());
  // One side decides: an unknown right side after a false && or a true || does not matter.
  CHECK(test("a = b && $UNSET = x") == false);
  CHECK(test("a = a || $UNSET = x") == true);
  std::string why;
  CHECK_FALSE(evaluate_test({{"-d", "", false}, {"/data", "", false}}, false, why));
  CHECK(why == "tests /data with -d, which only the machine that runs the script can answer");
}
