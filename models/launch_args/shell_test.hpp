// The shell's `test` / `[ … ]` / `[[ … ]]` expressions, on words already expanded: what an
// if-condition of a launch script asks (bash(1), "CONDITIONAL EXPRESSIONS").
//
// Evaluated: `! e`, `e1 && e2`, `e1 || e2` (and -a / -o), `( e )`, -n and -z, string = == != < >,
// integer -eq -ne -lt -le -gt -ge, and a lone word (true when not empty). Not evaluated (the
// answer is nullopt with the reason): file tests (-f, -d, -e, …), a word that needs something
// the script does not set, a pattern on the right of == or != inside [[ ]], anything else.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace wallsim::models {

struct TestWord {
  std::string text;
  std::string unresolved;       // what the word needed and did not get ("" when resolved)
  bool operator_token = false;  // && or || inside [[ ]]
};

// `words` are the expression without its brackets. nullopt when it cannot be evaluated; `why`
// then says what it needs.
std::optional<bool> evaluate_test(const std::vector<TestWord>& words, bool double_bracket,
                                  std::string& why);

}  // namespace wallsim::models
