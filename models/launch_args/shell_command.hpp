// The launch line of a training job, read out of a shell script or a bare argument list.
//
// The script is lexed (shell_lexer.hpp), parsed into simple statements, if-blocks and loops
// (shell_script.hpp) and run in a small model of the shell: scalar and array assignments
// (NAME=…, export NAME=…, NAME=(…), NAME+=(…), unset NAME) are recorded in order, each command's
// words are expanded with word splitting of unquoted expansions, and-or lists (&&, ||) and
// if/elif/else run the branch their condition selects ([ … ], [[ … ]], test, true, false, !;
// shell_test.hpp). A condition that cannot be evaluated (it needs a variable the script does not
// set, or asks about files) skips its whole block, and loops (for, while, until, select, case)
// are not run: a note names the lines and the variables assigned there. The launch line is the
// last command with a word ending in ".py" (torchrun … pretrain_gpt.py …, python
// pretrain_gpt.py …); the words before that word are the launcher's, the words after it the
// training arguments. Without such a command, the text is a bare argument list: every
// statement's words, each statement starting with an option.
//
// A word that needs a variable the script never sets (a positional parameter, an environment
// variable without a default, one assigned only inside a skipped block) or a construct that is
// not evaluated ($(…), $((…)), `…`) keeps the text as written and lists what it needed in
// `unresolved`: the caller decides whether that word matters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace wallsim::models {

struct ShellWord {
  std::string text;
  std::vector<std::string> unresolved;  // e.g. "$CHECKPOINT_PATH", "$1", "$(date +%s)"
  int line = 0;                         // 1-based line of the word's statement
};

struct LaunchCommand {
  std::string script;                // the "*.py" word; "" for a bare argument list
  std::vector<ShellWord> launcher;   // the words before the script (torchrun and its options)
  std::vector<ShellWord> arguments;  // the training arguments
  std::vector<std::string> notes;    // what was not evaluated (skipped control flow)
};

// Throws InputError naming `source` and the line for text that cannot be read, and for a bare
// argument list with a statement that does not start with an option.
LaunchCommand read_launch_command(std::string_view text, const std::string& source);

}  // namespace wallsim::models
