#include "models/launch_args/shell_command.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "models/launch_args/shell_fields.hpp"
#include "models/launch_args/shell_lexer.hpp"
#include "models/launch_args/shell_script.hpp"
#include "models/launch_args/shell_test.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

// A variable's value: one element for a scalar, any number for an array.
struct ShellValue {
  std::vector<ShellWord> elements;  // each with what it could not resolve
};

using Variables = std::map<std::string, ShellValue, std::less<>>;

bool is_keyword(const std::string& word, std::initializer_list<std::string_view> keywords) {
  return std::find(keywords.begin(), keywords.end(), word) != keywords.end();
}

class Shell {
 public:
  explicit Shell(std::string source) : source_(std::move(source)) {}

  LaunchCommand run(const std::vector<ShellNode>& nodes) {
    run_nodes(nodes);
    return launch();
  }

 private:
  static std::optional<std::string> plain(const ShellToken& token) {
    const std::string word = plain_word(token);
    if (word.empty()) return std::nullopt;
    return word;
  }

  static std::optional<std::string> assignment_name(const ShellToken& token) {
    if (token.pieces.empty() || token.pieces[0].kind != ShellPiece::Kind::kLiteral ||
        token.pieces[0].quoted) {
      return std::nullopt;
    }
    const std::string& text = token.pieces[0].text;
    const std::size_t eq = text.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    const std::string name = text.substr(0, text[eq - 1] == '+' ? eq - 1 : eq);
    const bool valid = std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
    });
    if (!valid || std::isdigit(static_cast<unsigned char>(name[0])) != 0) return std::nullopt;
    return name;
  }

  void run_nodes(const std::vector<ShellNode>& nodes) {
    for (const ShellNode& node : nodes) {
      if (node.kind == ShellNode::Kind::kSimple) {
        run_list(node.statement, node.statement.line, node.statement.line);
      } else if (node.kind == ShellNode::Kind::kIf) {
        run_if(node);
      } else {
        skip(node.all, node.first_line, node.last_line,
             "(" + node.keyword + " … " + closer(node.keyword) + ") are not evaluated");
      }
    }
  }

  static std::string closer(const std::string& keyword) {
    return keyword == "if" ? "fi" : keyword == "case" ? "esac" : "done";
  }

  // The first branch whose condition holds runs; a condition that cannot be evaluated skips the
  // whole block with a note.
  void run_if(const ShellNode& node) {
    for (const ShellNode::Branch& branch : node.branches) {
      std::optional<bool> holds = true;
      std::string why;
      if (!branch.condition.tokens.empty()) holds = status(branch.condition, why);
      if (!holds) {
        return skip(node.all, node.first_line, node.last_line,
                    "(if … fi) are not evaluated: the condition at line " +
                        std::to_string(branch.condition.line) + " " + why);
      }
      if (*holds) return run_nodes(branch.body);
    }
  }

  void skip(const std::vector<ShellStatement>& statements, int first, int last,
            const std::string& what) {
    std::set<std::string> assigned;
    for (const ShellStatement& statement : statements) {
      for (const ShellToken& token : statement.tokens) {
        if (auto name = assignment_name(token)) assigned.insert(*name);
      }
    }
    std::string note = first == last
                           ? "line " + std::to_string(first)
                           : "lines " + std::to_string(first) + "-" + std::to_string(last);
    note += " " + what;
    if (!assigned.empty()) {
      note += "; the assignments there are ignored:";
      for (const auto& name : assigned) {
        note += " " + name;
        skipped_.insert(name);
      }
    }
    notes_.push_back(note);
  }

  // An and-or list: each part runs when && follows success or || follows failure. A part whose
  // status cannot be known stops the list with a note.
  void run_list(const ShellStatement& statement, int first, int last) {
    std::string why;
    if (!status(statement, why)) {
      skip({statement}, first, last, "is evaluated only up to a condition: it " + why);
    }
  }

  std::optional<bool> status(const ShellStatement& statement, std::string& why) {
    std::optional<bool> ok = true;
    std::string op;
    std::size_t i = 0;
    while (i < statement.tokens.size()) {
      const std::size_t end = part_end(statement.tokens, i);
      const bool runs = op.empty() || (op == "&&") == *ok;
      if (runs) {
        ok = run_part(statement, i, end, why);
        if (!ok) return std::nullopt;
      }
      op = end < statement.tokens.size() ? statement.tokens[end].op : "";
      i = end + 1;
    }
    return ok;
  }

  // One command of an and-or list ends at the next && or || outside [[ … ]].
  static std::size_t part_end(const std::vector<ShellToken>& tokens, std::size_t begin) {
    bool in_double_bracket = false;
    for (std::size_t i = begin; i < tokens.size(); ++i) {
      const std::string word = plain_word(tokens[i]);
      if (word == "[[") in_double_bracket = true;
      if (word == "]]") in_double_bracket = false;
      if (!tokens[i].op.empty() && !in_double_bracket) return i;
    }
    return tokens.size();
  }

  std::optional<bool> run_part(const ShellStatement& statement, std::size_t begin, std::size_t end,
                               std::string& why) {
    const std::vector<ShellToken> tokens(statement.tokens.begin() + static_cast<long>(begin),
                                         statement.tokens.begin() + static_cast<long>(end));
    if (tokens.empty()) return true;
    const std::string word = plain_word(tokens[0]);
    if (word == "true" || word == ":") return true;
    if (word == "false") return false;
    if (word == "!") {
      auto value = run_part(statement, begin + 1, end, why);
      return value ? std::optional<bool>(!*value) : std::nullopt;
    }
    if (word == "[" || word == "[[" || word == "test") return test(tokens, statement.line, why);
    execute(ShellStatement{statement.line, tokens});
    return true;  // assignments and other commands succeed
  }

  std::optional<bool> test(const std::vector<ShellToken>& tokens, int line, std::string& why) {
    const std::string open = plain_word(tokens[0]);
    const std::string close = open == "[[" ? "]]" : open == "[" ? "]" : "";
    std::size_t stop = tokens.size();
    if (!close.empty()) {
      if (plain_word(tokens.back()) != close) {
        why = "has no closing " + close;
        return std::nullopt;
      }
      --stop;
    }
    std::vector<TestWord> words;
    for (std::size_t i = 1; i < stop; ++i) {
      if (!tokens[i].op.empty()) {
        words.push_back({tokens[i].op, "", true});
        continue;
      }
      const ShellWord value = join(expand(tokens[i].pieces, line));
      words.push_back(
          {value.text, value.unresolved.empty() ? "" : value.unresolved.front(), false});
    }
    return evaluate_test(words, open == "[[", why);
  }

  void execute(const ShellStatement& statement) {
    std::size_t first = 0;
    const auto word = plain(statement.tokens[0]).value_or("");
    if (is_keyword(word, {"export", "local", "declare", "readonly", "typeset"})) first = 1;
    if (word == "unset") {
      for (std::size_t i = 1; i < statement.tokens.size(); ++i) {
        variables_.erase(plain(statement.tokens[i]).value_or(""));
      }
      return;
    }
    while (first < statement.tokens.size() &&
           plain(statement.tokens[first]).value_or("x").starts_with("-") && first > 0) {
      ++first;  // declare -a, export -n: options of the builtin
    }
    std::size_t i = first;
    while (i < statement.tokens.size() && assignment_name(statement.tokens[i])) {
      assign(statement.tokens[i], statement.line);
      ++i;
    }
    if (i < statement.tokens.size() && first == 0) command(statement, i);
  }

  void assign(const ShellToken& token, int line) {
    const std::string& head = token.pieces[0].text;
    const std::size_t eq = head.find('=');
    const bool append = head[eq - 1] == '+';
    const std::string name = *assignment_name(token);
    ShellValue value;
    if (token.array_assignment) {
      for (const ShellToken& element : token.elements) {
        for (ShellWord& field : expand(element.pieces, line)) {
          value.elements.push_back(std::move(field));
        }
      }
    } else {
      std::vector<ShellPiece> rest(token.pieces.begin(), token.pieces.end());
      rest[0].text = head.substr(eq + 1);
      ShellWord joined = join(expand_quoted(rest, line));
      value.elements.push_back(std::move(joined));
    }
    ShellValue& target = variables_[name];
    if (!append) target = ShellValue{};
    if (append && !token.array_assignment && !target.elements.empty()) {
      target.elements.back().text += value.elements.front().text;
      for (const auto& what : value.elements.front().unresolved) {
        target.elements.back().unresolved.push_back(what);
      }
    } else {
      target.elements.insert(target.elements.end(), value.elements.begin(), value.elements.end());
    }
  }

  static ShellWord join(const std::vector<ShellWord>& fields) {
    ShellWord word;
    for (const ShellWord& field : fields) {
      if (&field != &fields.front()) word.text += " ";
      word.text += field.text;
      word.unresolved.insert(word.unresolved.end(), field.unresolved.begin(),
                             field.unresolved.end());
    }
    return word;
  }

  // An assignment's value: no word splitting, as if every piece were quoted.
  std::vector<ShellWord> expand_quoted(std::vector<ShellPiece> pieces, int line) {
    for (ShellPiece& piece : pieces) piece.quoted = true;
    return expand(pieces, line);
  }

  std::vector<ShellWord> expand(const std::vector<ShellPiece>& pieces, int line) {
    FieldBuilder fields(line);
    for (const ShellPiece& piece : pieces) {
      if (piece.kind == ShellPiece::Kind::kLiteral) {
        fields.append(piece.text);
      } else if (piece.kind == ShellPiece::Kind::kUnsupported) {
        fields.append(piece.text);
        fields.mark(piece.text);
      } else {
        expand_parameter(piece, line, fields);
      }
    }
    return fields.take();
  }

  void expand_parameter(const ShellPiece& piece, int line, FieldBuilder& fields) {
    const auto it = variables_.find(piece.name);
    const bool set =
        it != variables_.end() && !(piece.fallback && piece.text.find(":-") != std::string::npos &&
                                    join_value(it->second).empty());
    if (!set && piece.fallback) {
      for (const ShellWord& word : expand(lex_shell_word(*piece.fallback, source_, line), line)) {
        piece.quoted ? fields.append(word.text) : fields.append_split(word.text);
        for (const auto& what : word.unresolved) fields.mark(what);
      }
      return;
    }
    if (!set) {
      fields.append(piece.text);
      fields.mark(skipped_.contains(piece.name) ? piece.text + " (set only inside a skipped block)"
                                                : piece.text);
      return;
    }
    const ShellValue& value = it->second;
    const bool separate = piece.all_elements && !piece.join_elements;
    for (std::size_t i = 0; i < value.elements.size(); ++i) {
      if (!piece.all_elements && i > 0) break;  // $ARRAY is its first element
      if (i > 0 && (separate || !piece.quoted)) fields.cut();
      if (i > 0 && !separate && piece.quoted) fields.append(" ");
      const ShellWord& element = value.elements[i];
      piece.quoted ? fields.append(element.text) : fields.append_split(element.text);
      for (const auto& what : element.unresolved) fields.mark(what);
      if (!piece.quoted && separate) fields.cut();
    }
  }

  static std::string join_value(const ShellValue& value) {
    std::string text;
    for (const auto& element : value.elements) text += element.text;
    return text;
  }

  void command(const ShellStatement& statement, std::size_t first) {
    std::vector<ShellWord> words;
    for (std::size_t i = first; i < statement.tokens.size(); ++i) {
      for (ShellWord& word : expand(statement.tokens[i].pieces, statement.line)) {
        words.push_back(std::move(word));
      }
    }
    if (!words.empty()) commands_.push_back(std::move(words));
  }

  static std::optional<std::size_t> script_index(const std::vector<ShellWord>& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& text = words[i].text;
      if (!text.starts_with("-") && text.ends_with(".py")) return i;
    }
    return std::nullopt;
  }

  LaunchCommand launch() {
    LaunchCommand out;
    out.notes = notes_;
    for (auto it = commands_.rbegin(); it != commands_.rend(); ++it) {
      if (auto index = script_index(*it)) {
        out.script = (*it)[*index].text;
        out.launcher.assign(it->begin(), it->begin() + static_cast<long>(*index));
        out.arguments.assign(it->begin() + static_cast<long>(*index) + 1, it->end());
        return out;
      }
    }
    for (auto& words : commands_) {
      if (!words.front().text.starts_with("-")) {
        throw InputError(source_ + ":" + std::to_string(words.front().line), "", "",
                         "'" + words.front().text +
                             "' is not an option, and no command runs a *.py script (give "
                             "the launch line, e.g. torchrun … pretrain_gpt.py --num-layers …, "
                             "or only the arguments)");
      }
      out.arguments.insert(out.arguments.end(), words.begin(), words.end());
    }
    return out;
  }

  std::string source_;
  Variables variables_;
  std::vector<std::vector<ShellWord>> commands_;
  std::vector<std::string> notes_;
  std::set<std::string> skipped_;
};

}  // namespace

LaunchCommand read_launch_command(std::string_view text, const std::string& source) {
  return Shell(source).run(parse_shell_script(lex_shell(text, source), source));
}

}  // namespace wallsim::models
