#include "models/launch_args/shell_lexer.hpp"

#include <cctype>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

bool is_name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool is_name_char(char c) {
  return is_name_start(c) || std::isdigit(static_cast<unsigned char>(c)) != 0;
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}

bool ends_statement(char c) {
  return c == '\n' || c == ';' || c == '&' || c == '|';
}

bool ends_word(char c) {
  return is_blank(c) || ends_statement(c) || c == '<' || c == '>';
}

// "NAME=" or "NAME+=": the start of an assignment.
bool is_assignment_prefix(std::string_view text) {
  if (text.empty() || !is_name_start(text[0])) return false;
  std::size_t i = 1;
  while (i < text.size() && is_name_char(text[i])) ++i;
  if (i < text.size() && text[i] == '+') ++i;
  return i + 1 == text.size() && text[i] == '=';
}

class Lexer {
 public:
  Lexer(std::string_view text, std::string source, int line)
      : text_(text), source_(std::move(source)), line_(line) {}

  std::vector<ShellStatement> statements() {
    std::vector<ShellStatement> out;
    ShellStatement current;
    while (!done()) {
      const char c = peek();
      if (is_blank(c)) {
        ++pos_;
      } else if (continuation()) {
        pos_ += 2;
        ++line_;
      } else if (c == '#') {
        skip_comment();
      } else if ((c == '&' || c == '|') && peek(1) == c) {
        pos_ += 2;  // && and || join the commands of one and-or list
        ShellToken op;
        op.op = std::string(2, c);
        current.tokens.push_back(std::move(op));
      } else if (c == '\n' && !current.tokens.empty() && !current.tokens.back().op.empty()) {
        ++pos_;  // a list continues on the next line after && or ||
        ++line_;
      } else if (ends_statement(c)) {
        if (c == '\n') ++line_;
        ++pos_;
        if (!current.tokens.empty()) out.push_back(std::move(current));
        current = ShellStatement{};
      } else if (c == '<' || c == '>') {
        skip_redirection(current);
      } else {
        if (current.tokens.empty()) current.line = line_;
        current.tokens.push_back(token());
      }
    }
    if (!current.tokens.empty()) out.push_back(std::move(current));
    return out;
  }

  std::vector<ShellPiece> word_pieces() {
    ShellToken token;
    while (!done()) read_piece(token.pieces);
    return token.pieces;
  }

 private:
  bool done() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool continuation() const { return peek() == '\\' && peek(1) == '\n'; }

  [[noreturn]] void fail(int line, const std::string& problem) const {
    throw InputError(source_ + ":" + std::to_string(line), "", "", problem);
  }

  void skip_comment() {
    while (!done() && peek() != '\n') ++pos_;
  }

  // `2>&1`, `> log`, `< in`: the fd digits before, the operator and its target are dropped.
  void skip_redirection(ShellStatement& statement) {
    const bool after_digit = pos_ > 0 && std::isdigit(static_cast<unsigned char>(text_[pos_ - 1]));
    if (after_digit && !statement.tokens.empty() && is_fd_number(statement.tokens.back())) {
      statement.tokens.pop_back();
    }
    while (peek() == '<' || peek() == '>' || peek() == '&') ++pos_;
    while (is_blank(peek())) ++pos_;
    if (!done() && !ends_word(peek())) {
      ShellToken target;
      read_word(target);
    }
  }

  static bool is_fd_number(const ShellToken& token) {
    if (token.pieces.size() != 1 || token.pieces[0].kind != ShellPiece::Kind::kLiteral) {
      return false;
    }
    for (char c : token.pieces[0].text) {
      if (std::isdigit(static_cast<unsigned char>(c)) == 0) return false;
    }
    return !token.pieces[0].text.empty();
  }

  ShellToken token() {
    ShellToken token;
    read_word(token);
    if (peek() == '(' && token.pieces.size() == 1 &&
        token.pieces[0].kind == ShellPiece::Kind::kLiteral && !token.pieces[0].quoted &&
        is_assignment_prefix(token.pieces[0].text)) {
      ++pos_;
      token.array_assignment = true;
      read_array(token);
    }
    return token;
  }

  void read_array(ShellToken& array) {
    const int start = line_;
    while (true) {
      if (done()) fail(start, "unterminated array assignment (no closing ')')");
      const char c = peek();
      if (is_blank(c)) {
        ++pos_;
      } else if (continuation()) {
        pos_ += 2;
        ++line_;
      } else if (c == '\n') {
        ++pos_;
        ++line_;
      } else if (c == '#') {
        skip_comment();
      } else if (c == ')') {
        ++pos_;
        return;
      } else {
        ShellToken element;
        read_word(element);
        if (element.pieces.empty()) fail(line_, std::string("unexpected '") + c + "' in array");
        array.elements.push_back(std::move(element));
      }
    }
  }

  void read_word(ShellToken& token) {
    while (!done() && !ends_word(peek()) && !(peek() == ')' || peek() == '(')) {
      if (continuation()) {
        pos_ += 2;
        ++line_;
        continue;
      }
      read_piece(token.pieces);
    }
    // A lone '(' or ')' outside an array (a subshell): kept as a literal word.
    if (token.pieces.empty() && (peek() == '(' || peek() == ')')) {
      append_literal(token.pieces, std::string(1, peek()), false);
      ++pos_;
    }
  }

  void read_piece(std::vector<ShellPiece>& pieces) {
    const char c = peek();
    if (c == '\\') {
      pos_ += 2;
      if (pos_ <= text_.size()) append_literal(pieces, std::string(1, text_[pos_ - 1]), true);
    } else if (c == '\'') {
      single_quoted(pieces);
    } else if (c == '"') {
      double_quoted(pieces);
    } else if (c == '$') {
      dollar(pieces, false);
    } else if (c == '`') {
      backquoted(pieces);
    } else {
      if (c == '\n') ++line_;
      append_literal(pieces, std::string(1, c), false);
      ++pos_;
    }
  }

  static void append_literal(std::vector<ShellPiece>& pieces, const std::string& text,
                             bool quoted) {
    if (!pieces.empty() && pieces.back().kind == ShellPiece::Kind::kLiteral &&
        pieces.back().quoted == quoted) {
      pieces.back().text += text;
      return;
    }
    ShellPiece piece;
    piece.text = text;
    piece.quoted = quoted;
    pieces.push_back(std::move(piece));
  }

  void single_quoted(std::vector<ShellPiece>& pieces) {
    const int start = line_;
    const std::size_t end = text_.find('\'', pos_ + 1);
    if (end == std::string_view::npos) fail(start, "unterminated single quote");
    const std::string_view inside = text_.substr(pos_ + 1, end - pos_ - 1);
    for (char c : inside) line_ += c == '\n' ? 1 : 0;
    append_literal(pieces, std::string(inside), true);
    // '' still makes a word, even when empty.
    if (inside.empty()) append_literal(pieces, "", true);
    pos_ = end + 1;
  }

  void double_quoted(std::vector<ShellPiece>& pieces) {
    const int start = line_;
    ++pos_;
    append_literal(pieces, "", true);
    while (true) {
      if (done()) fail(start, "unterminated double quote");
      const char c = peek();
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\\' && std::string_view("$`\"\\\n").find(peek(1)) != std::string_view::npos) {
        if (peek(1) == '\n') ++line_;
        if (peek(1) != '\n') append_literal(pieces, std::string(1, peek(1)), true);
        pos_ += 2;
      } else if (c == '$') {
        dollar(pieces, true);
      } else if (c == '`') {
        backquoted(pieces);
      } else {
        if (c == '\n') ++line_;
        append_literal(pieces, std::string(1, c), true);
        ++pos_;
      }
    }
  }

  // The text from pos_ up to the bracket matching the opening one at pos_ + skip - 1.
  std::string balanced(std::size_t skip, char open, char close) {
    const int start = line_;
    int depth = 1;
    std::size_t i = pos_ + skip;
    for (; i < text_.size() && depth > 0; ++i) {
      if (text_[i] == open) ++depth;
      if (text_[i] == close) --depth;
      if (text_[i] == '\n') ++line_;
    }
    if (depth > 0) fail(start, std::string("unterminated '") + open + "'");
    std::string construct(text_.substr(pos_, i - pos_));
    pos_ = i;
    return construct;
  }

  void unsupported(std::vector<ShellPiece>& pieces, std::string text, bool quoted) {
    ShellPiece piece;
    piece.kind = ShellPiece::Kind::kUnsupported;
    piece.text = std::move(text);
    piece.quoted = quoted;
    pieces.push_back(std::move(piece));
  }

  void backquoted(std::vector<ShellPiece>& pieces) {
    const std::size_t end = text_.find('`', pos_ + 1);
    if (end == std::string_view::npos) fail(line_, "unterminated '`'");
    unsupported(pieces, std::string(text_.substr(pos_, end + 1 - pos_)), true);
    pos_ = end + 1;
  }

  void dollar(std::vector<ShellPiece>& pieces, bool quoted) {
    const char next = peek(1);
    if (next == '(') {
      unsupported(pieces, balanced(2, '(', ')'), quoted);
    } else if (next == '{') {
      braced(pieces, balanced(2, '{', '}'), quoted);
    } else if (is_name_start(next)) {
      std::size_t end = pos_ + 1;
      while (end < text_.size() && is_name_char(text_[end])) ++end;
      parameter(pieces, std::string(text_.substr(pos_ + 1, end - pos_ - 1)), quoted);
      pos_ = end;
    } else if (next != '\0' &&
               std::string_view("0123456789@*#?$!-").find(next) != std::string_view::npos) {
      parameter(pieces, std::string(1, next), quoted);
      pos_ += 2;
    } else {
      append_literal(pieces, "$", quoted);
      ++pos_;
    }
  }

  ShellPiece& parameter(std::vector<ShellPiece>& pieces, std::string name, bool quoted) {
    ShellPiece piece;
    piece.kind = ShellPiece::Kind::kParameter;
    piece.text = "$" + name;
    piece.name = std::move(name);
    piece.quoted = quoted;
    pieces.push_back(std::move(piece));
    return pieces.back();
  }

  // "${…}": NAME, NAME[@], NAME[*], then optionally :-word / -word; anything else unsupported.
  void braced(std::vector<ShellPiece>& pieces, const std::string& construct, bool quoted) {
    const std::string_view inside(construct.data() + 2, construct.size() - 3);
    std::size_t i = 0;
    if (!inside.empty() && !is_name_start(inside[0]) &&
        std::isdigit(static_cast<unsigned char>(inside[0])) == 0) {
      return unsupported(pieces, construct, quoted);
    }
    while (i < inside.size() && is_name_char(inside[i])) ++i;
    std::string name(inside.substr(0, i));
    bool all = false;
    bool join = false;
    if (inside.substr(i, 3) == "[@]" || inside.substr(i, 3) == "[*]") {
      all = true;
      join = inside[i + 1] == '*';
      i += 3;
    }
    std::optional<std::string> fallback;
    if (inside.substr(i, 2) == ":-") {
      fallback = std::string(inside.substr(i + 2));
    } else if (i < inside.size() && inside[i] == '-') {
      fallback = std::string(inside.substr(i + 1));
    } else if (i != inside.size() || name.empty()) {
      return unsupported(pieces, construct, quoted);
    }
    ShellPiece& piece = parameter(pieces, name, quoted);
    piece.text = construct;
    piece.all_elements = all;
    piece.join_elements = join;
    piece.fallback = std::move(fallback);
  }

  std::string_view text_;
  std::string source_;
  int line_;
  std::size_t pos_ = 0;
};

}  // namespace

std::vector<ShellStatement> lex_shell(std::string_view text, const std::string& source) {
  return Lexer(text, source, 1).statements();
}

std::vector<ShellPiece> lex_shell_word(std::string_view text, const std::string& source, int line) {
  return Lexer(text, source, line).word_pieces();
}

}  // namespace wallsim::models
