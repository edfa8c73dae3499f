// The words of a shell script, before expansion (the first half of shell_command.hpp).
//
// A deliberate subset of POSIX sh / bash lexing: quoting ('…', "…", backslash), backslash-newline
// continuations, comments, statements ended by a newline, ';', '|' or '&' (an and-or list's
// '&&' and '||' stay inside the statement as operator tokens),
// redirections (dropped with their target), bash array assignments NAME=(…) and NAME+=(…), and
// the expansions $NAME, ${NAME}, ${NAME:-word}, ${NAME-word}, ${NAME[@]}, ${NAME[*]}, $1….
// Command substitution ($(…), `…`), arithmetic ($((…))) and every other ${…} form are kept as
// text and marked unsupported; the expander reports them when a word that matters needs them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wallsim::models {

// One piece of a word: literal text, a parameter expansion, or an unsupported construct.
struct ShellPiece {
  enum class Kind { kLiteral, kParameter, kUnsupported };
  Kind kind = Kind::kLiteral;
  std::string text;                     // literal text, or the construct as written
  bool quoted = false;                  // inside quotes: no word splitting
  std::string name;                     // parameter name (kParameter)
  bool all_elements = false;            // ${NAME[@]} or ${NAME[*]}
  bool join_elements = false;           // ${NAME[*]}: one word when quoted
  std::optional<std::string> fallback;  // ${NAME:-word}: `word` as written (lexed on use)
};

struct ShellToken {
  std::vector<ShellPiece> pieces;
  std::string op;  // "&&" or "||" between the commands of an and-or list; "" for a word
  // NAME=(…) / NAME+=(…): the pieces hold "NAME=" / "NAME+=", the elements the array's words.
  bool array_assignment = false;
  std::vector<ShellToken> elements;
};

struct ShellStatement {
  int line = 0;  // 1-based line of its first word
  std::vector<ShellToken> tokens;
};

// Splits `text` into statements. Throws InputError naming `source` and the line for an
// unterminated quote, ${…} or array.
std::vector<ShellStatement> lex_shell(std::string_view text, const std::string& source);

// The pieces of a single word given as text (an expansion's default, `word` in ${NAME:-word}).
std::vector<ShellPiece> lex_shell_word(std::string_view text, const std::string& source, int line);

}  // namespace wallsim::models
