// Reading JSON configuration into typed values, with errors that point at the input.
//
// JsonNode is a view of one JSON value that remembers its file and JSON path, written the way
// `--set` takes it ("fabric.oversubscription", "loads[3]"; the whole document is "$"). JsonObject
// reads an object key by key and, on finish(), rejects every key nobody asked for, listing the
// allowed ones. All failures throw InputError naming file, path, value and what is allowed.
//
// Only translation units that parse configuration include this header; it pulls in the
// forward declarations of nlohmann::json alone.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace wallsim {

class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string file, std::string path);

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  // Throws InputError for this node: "<file>: <path> = <value>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const;

  bool is_null() const;
  bool is_object() const;
  bool is_array() const;
  bool is_string() const;
  bool is_number() const;

  double as_number(double min = -std::numeric_limits<double>::infinity(),
                   double max = std::numeric_limits<double>::infinity()) const;
  // Like as_number but the bound is exclusive: value > min.
  double as_positive_number() const;
  std::int64_t as_integer(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                          std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  bool as_bool() const;
  std::string as_string() const;
  // A string that must be one of `allowed`.
  std::string as_choice(std::initializer_list<std::string_view> allowed) const;
  // The same over names known at run time (a registry's).
  std::string as_choice(const std::vector<std::string>& allowed) const;
  std::vector<JsonNode> as_array() const;

  // The value printed compactly (long values are shortened) for messages.
  std::string repr() const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

class JsonObject {
 public:
  // Fails unless `node` is an object.
  explicit JsonObject(const JsonNode& node);

  const JsonNode& node() const { return node_; }
  bool has(std::string_view key) const;
  // Required member; a missing one fails naming the key.
  JsonNode at(std::string_view key);
  // Optional member; absent or null gives nullopt.
  std::optional<JsonNode> find(std::string_view key);

  double number(std::string_view key, double min = -std::numeric_limits<double>::infinity(),
                double max = std::numeric_limits<double>::infinity());
  double number_or(std::string_view key, double fallback,
                   double min = -std::numeric_limits<double>::infinity(),
                   double max = std::numeric_limits<double>::infinity());
  double positive(std::string_view key);
  double positive_or(std::string_view key, double fallback);
  std::int64_t integer(std::string_view key, std::int64_t min = 0,
                       std::int64_t max = std::numeric_limits<std::int64_t>::max());
  std::int64_t integer_or(std::string_view key, std::int64_t fallback, std::int64_t min = 0,
                          std::int64_t max = std::numeric_limits<std::int64_t>::max());
  bool boolean(std::string_view key);
  bool boolean_or(std::string_view key, bool fallback);
  std::string string(std::string_view key);
  std::string string_or(std::string_view key, std::string fallback);
  std::string choice(std::string_view key, std::initializer_list<std::string_view> allowed);
  std::string choice_or(std::string_view key, std::string fallback,
                        std::initializer_list<std::string_view> allowed);
  std::string choice_or(std::string_view key, std::string fallback,
                        const std::vector<std::string>& allowed);

  // Rejects members that were never read; the message lists the keys this object allows.
  void finish() const;

 private:
  JsonNode member(std::string_view key) const;

  JsonNode node_;
  std::set<std::string, std::less<>> read_;
};

// Parses a JSON file; syntax errors and unreadable files throw InputError naming the file.
nlohmann::json load_json_file(const std::string& path);

// Parses JSON text that came from `source` (a file name or "command line").
nlohmann::json parse_json_text(const std::string& text, const std::string& source);

// Applies one `--set a.b.c=value` override. The value is read as JSON when it parses as JSON
// (numbers, true/false, null, quoted strings, arrays, objects) and as a plain string
// otherwise; null removes the key (its default applies). Intermediate objects are created as
// needed; indexing through a non-object fails.
void apply_override(nlohmann::json& root, const std::string& assignment);

}  // namespace wallsim
