// A shell script's statements as a tree of simple statements, if-blocks and loops (the middle of
// shell_command.hpp: lexed statements in, nodes to run out).
//
// `if LIST; then …; [elif LIST; then …;]* [else …;] fi` becomes one node whose branches keep
// their condition and body; `for`, `while`, `until`, `select` and `case` blocks are kept whole
// (with nesting) as loops, which the shell model does not run.
#pragma once

#include <string>
#include <vector>

#include "models/launch_args/shell_lexer.hpp"

namespace wallsim::models {

struct ShellNode {
  enum class Kind { kSimple, kIf, kLoop };
  struct Branch;

  Kind kind = Kind::kSimple;
  ShellStatement statement;         // kSimple
  std::vector<Branch> branches;     // kIf: if and elifs; a branch without condition is the else
  std::string keyword;              // kIf, kLoop: "if", "for", …
  int first_line = 0;               // kIf, kLoop
  int last_line = 0;                // kIf, kLoop: the line of fi / done / esac
  std::vector<ShellStatement> all;  // kIf, kLoop: every statement inside, for the notes
};

struct ShellNode::Branch {
  ShellStatement condition;  // no tokens: the else branch
  std::vector<ShellNode> body;
};

// Throws InputError naming `source` and the line for an unclosed block or a missing then/do.
std::vector<ShellNode> parse_shell_script(std::vector<ShellStatement> statements,
                                          const std::string& source);

// The first token as plain text when it is one unquoted literal, else "".
std::string plain_word(const ShellToken& token);

}  // namespace wallsim::models
