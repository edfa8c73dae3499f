#include "models/launch_args/shell_script.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

bool one_of(const std::string& word, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

const std::initializer_list<std::string_view> kOpeners = {"if",    "for",  "while",
                                                          "until", "case", "select"};
const std::initializer_list<std::string_view> kClosers = {"fi", "done", "esac"};

class ScriptParser {
 public:
  ScriptParser(std::vector<ShellStatement> statements, std::string source)
      : statements_(std::move(statements)), source_(std::move(source)) {}

  std::vector<ShellNode> script() {
    std::vector<ShellNode> nodes = list({});
    if (!done()) fail("'" + first() + "' without its opening keyword");
    return nodes;
  }

 private:
  bool done() const { return index_ >= statements_.size(); }
  ShellStatement& current() { return statements_[index_]; }
  std::string first() { return done() ? "" : plain_word(current().tokens[0]); }

  [[noreturn]] void fail(const std::string& problem) {
    const int line = done() ? (statements_.empty() ? 1 : statements_.back().line) : current().line;
    throw InputError(source_ + ":" + std::to_string(line), "", "", problem);
  }

  // Drops the leading keyword of the current statement; the rest, if any, is a statement.
  void consume_keyword() {
    ShellStatement& statement = current();
    statement.tokens.erase(statement.tokens.begin());
    if (statement.tokens.empty()) ++index_;
  }

  ShellStatement take_condition() {
    ShellStatement condition = current();
    condition.tokens.erase(condition.tokens.begin());
    ++index_;
    if (condition.tokens.empty()) fail("a condition is missing");
    return condition;
  }

  void expect(const char* keyword) {
    if (first() != keyword) fail(std::string("'") + keyword + "' expected");
    consume_keyword();
  }

  std::vector<ShellNode> list(std::initializer_list<std::string_view> stop) {
    std::vector<ShellNode> nodes;
    while (!done()) {
      const std::string word = first();
      if (one_of(word, stop) || one_of(word, kClosers) || one_of(word, {"elif", "else"})) break;
      if (word == "if") {
        nodes.push_back(if_block());
      } else if (one_of(word, kOpeners)) {
        nodes.push_back(loop());
      } else {
        ShellNode node;
        node.statement = current();
        ++index_;
        nodes.push_back(std::move(node));
      }
    }
    return nodes;
  }

  ShellNode if_block() {
    ShellNode node;
    node.kind = ShellNode::Kind::kIf;
    node.keyword = "if";
    node.first_line = current().line;
    const std::size_t start = index_;
    std::string word = "if";
    while (word == "if" || word == "elif") {
      ShellNode::Branch branch{take_condition(), {}};
      expect("then");
      branch.body = list({"elif", "else", "fi"});
      node.branches.push_back(std::move(branch));
      word = first();
    }
    if (word == "else") {
      consume_keyword();
      node.branches.push_back({ShellStatement{}, list({"fi"})});
    }
    if (first() != "fi") fail("'if' at line " + std::to_string(node.first_line) + " has no 'fi'");
    node.last_line = current().line;
    consume_keyword();
    node.all.assign(statements_.begin() + static_cast<long>(start),
                    statements_.begin() + static_cast<long>(index_));
    return node;
  }

  // A loop or case block, kept whole: nesting counted by the keywords that open and close.
  ShellNode loop() {
    ShellNode node;
    node.kind = ShellNode::Kind::kLoop;
    node.keyword = first();
    node.first_line = current().line;
    int depth = 0;
    do {
      if (done())
        fail("'" + node.keyword + "' at line " + std::to_string(node.first_line) +
             " is not closed");
      for (const ShellToken& token : current().tokens) {
        const std::string word = plain_word(token);
        depth += one_of(word, kOpeners) ? 1 : one_of(word, kClosers) ? -1 : 0;
      }
      node.last_line = current().line;
      node.all.push_back(current());
      ++index_;
    } while (depth > 0);
    return node;
  }

  std::vector<ShellStatement> statements_;
  std::string source_;
  std::size_t index_ = 0;
};

}  // namespace

std::string plain_word(const ShellToken& token) {
  if (token.pieces.size() != 1 || token.pieces[0].kind != ShellPiece::Kind::kLiteral ||
      token.pieces[0].quoted) {
    return "";
  }
  return token.pieces[0].text;
}

std::vector<ShellNode> parse_shell_script(std::vector<ShellStatement> statements,
                                          const std::string& source) {
  return ScriptParser(std::move(statements), source).script();
}

}  // namespace wallsim::models
