#include "sim/core/json_reader.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.hpp"

namespace wallsim {
namespace {

std::string join_path(const std::string& parent, std::string_view key) {
  if (parent.empty() || parent == "$") return std::string(key);
  return parent + "." + std::string(key);
}

template <typename Names>
std::string list_allowed(const Names& allowed) {
  std::string out;
  for (std::string_view name : allowed) {
    if (!out.empty()) out += ", ";
    out += std::string(name);
  }
  return out;
}

template <typename Names>
bool is_one_of(const std::string& text, const Names& allowed) {
  for (std::string_view name : allowed) {
    if (text == name) return true;
  }
  return false;
}

std::string format_number(double value) {
  std::ostringstream out;
  out.precision(12);
  out << value;
  return out.str();
}

}  // namespace

JsonNode::JsonNode(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(path.empty() ? "$" : std::move(path)) {}

void JsonNode::fail(const std::string& problem) const {
  throw InputError(file_, path_, repr(), problem);
}

bool JsonNode::is_null() const {
  return value_->is_null();
}
bool JsonNode::is_object() const {
  return value_->is_object();
}
bool JsonNode::is_array() const {
  return value_->is_array();
}
bool JsonNode::is_string() const {
  return value_->is_string();
}
bool JsonNode::is_number() const {
  return value_->is_number();
}

std::string JsonNode::repr() const {
  // Replaces bytes that are not UTF-8 so that reporting a bad value cannot itself fail.
  std::string text = value_->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) {
    std::size_t cut = kMax - 3;
    // Never cut a multi-byte character in two.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

double JsonNode::as_number(double min, double max) const {
  if (!value_->is_number()) fail("must be a number");
  const double value = value_->get<double>();
  if (!std::isfinite(value)) fail("must be a finite number");
  if (value < min || value > max) {
    std::string range;
    if (std::isfinite(min) && std::isfinite(max)) {
      range = "between " + format_number(min) + " and " + format_number(max);
    } else if (std::isfinite(min)) {
      range = ">= " + format_number(min);
    } else {
      range = "<= " + format_number(max);
    }
    fail("must be a number " + range);
  }
  return value;
}

double JsonNode::as_positive_number() const {
  const double value = as_number();
  if (!(value > 0)) fail("must be a number > 0");
  return value;
}

std::int64_t JsonNode::as_integer(std::int64_t min, std::int64_t max) const {
  if (!value_->is_number_integer()) {
    const bool integral_double = value_->is_number_float() &&
                                 std::trunc(value_->get<double>()) == value_->get<double>() &&
                                 std::fabs(value_->get<double>()) < 9e15;
    if (!integral_double) fail("must be an integer");
  }
  const auto value = value_->is_number_float() ? static_cast<std::int64_t>(value_->get<double>())
                                               : value_->get<std::int64_t>();
  if (value < min || value > max) {
    std::string range = max == std::numeric_limits<std::int64_t>::max()
                            ? ">= " + std::to_string(min)
                            : "between " + std::to_string(min) + " and " + std::to_string(max);
    fail("must be an integer " + range);
  }
  return value;
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("must be true or false");
  return value_->get<bool>();
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("must be a string");
  return value_->get<std::string>();
}

std::string JsonNode::as_choice(std::initializer_list<std::string_view> allowed) const {
  if (value_->is_string() && is_one_of(value_->get_ref<const std::string&>(), allowed)) {
    return value_->get_ref<const std::string&>();
  }
  fail("must be one of: " + list_allowed(allowed));
}

std::string JsonNode::as_choice(const std::vector<std::string>& allowed) const {
  if (value_->is_string() && is_one_of(value_->get_ref<const std::string&>(), allowed)) {
    return value_->get_ref<const std::string&>();
  }
  fail("must be one of: " + list_allowed(allowed));
}

std::vector<JsonNode> JsonNode::as_array() const {
  if (!value_->is_array()) fail("must be an array");
  std::vector<JsonNode> items;
  items.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    items.emplace_back((*value_)[i], file_,
                       (path_ == "$" ? "" : path_) + "[" + std::to_string(i) + "]");
  }
  return items;
}

JsonObject::JsonObject(const JsonNode& node) : node_(node) {
  if (!node.is_object()) node.fail("must be a JSON object");
}

bool JsonObject::has(std::string_view key) const {
  return node_.json().contains(std::string(key));
}

JsonNode JsonObject::member(std::string_view key) const {
  return JsonNode(node_.json().at(std::string(key)), node_.file(), join_path(node_.path(), key));
}

JsonNode JsonObject::at(std::string_view key) {
  read_.insert(std::string(key));
  if (!has(key)) {
    throw InputError(node_.file(), join_path(node_.path(), key), "", "is required but missing");
  }
  return member(key);
}

std::optional<JsonNode> JsonObject::find(std::string_view key) {
  read_.insert(std::string(key));
  if (!has(key) || node_.json().at(std::string(key)).is_null()) return std::nullopt;
  return member(key);
}

double JsonObject::number(std::string_view key, double min, double max) {
  return at(key).as_number(min, max);
}

double JsonObject::number_or(std::string_view key, double fallback, double min, double max) {
  auto node = find(key);
  return node ? node->as_number(min, max) : fallback;
}

double JsonObject::positive(std::string_view key) {
  return at(key).as_positive_number();
}

double JsonObject::positive_or(std::string_view key, double fallback) {
  auto node = find(key);
  return node ? node->as_positive_number() : fallback;
}

std::int64_t JsonObject::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  return at(key).as_integer(min, max);
}

std::int64_t JsonObject::integer_or(std::string_view key, std::int64_t fallback, std::int64_t min,
                                    std::int64_t max) {
  auto node = find(key);
  return node ? node->as_integer(min, max) : fallback;
}

bool JsonObject::boolean(std::string_view key) {
  return at(key).as_bool();
}

bool JsonObject::boolean_or(std::string_view key, bool fallback) {
  auto node = find(key);
  return node ? node->as_bool() : fallback;
}

std::string JsonObject::string(std::string_view key) {
  return at(key).as_string();
}

std::string JsonObject::string_or(std::string_view key, std::string fallback) {
  auto node = find(key);
  return node ? node->as_string() : fallback;
}

std::string JsonObject::choice(std::string_view key,
                               std::initializer_list<std::string_view> allowed) {
  return at(key).as_choice(allowed);
}

std::string JsonObject::choice_or(std::string_view key, std::string fallback,
                                  std::initializer_list<std::string_view> allowed) {
  auto node = find(key);
  return node ? node->as_choice(allowed) : fallback;
}

std::string JsonObject::choice_or(std::string_view key, std::string fallback,
                                  const std::vector<std::string>& allowed) {
  auto node = find(key);
  return node ? node->as_choice(allowed) : fallback;
}

void JsonObject::finish() const {
  for (const auto& [key, value] : node_.json().items()) {
    if (read_.count(key) != 0) continue;
    std::string allowed;
    for (const auto& name : read_) allowed += (allowed.empty() ? "" : ", ") + name;
    throw InputError(node_.file(), join_path(node_.path(), key), "",
                     "unknown key (allowed here: " + allowed + ")");
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {
    // Syntax errors, and numbers too large for a double (out_of_range.406), alike.
    std::string detail = error.what();
    // nlohmann prefixes "[json.exception.parse_error.101] "; keep the human part.
    if (auto pos = detail.find("] "); pos != std::string::npos) detail = detail.substr(pos + 2);
    throw InputError(source, "", "", "invalid JSON: " + detail);
  }
}

nlohmann::json load_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_json_text(buffer.str(), path);
}

void apply_override(nlohmann::json& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("command line", "--set", assignment,
                     "expected key.path=value, e.g. training.micro_batch=2");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;

  nlohmann::json* node = &root;
  std::string walked;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (key.empty()) {
      throw InputError("command line", "--set", assignment, "empty key in path '" + path + "'");
    }
    if (!node->is_object()) {
      throw InputError("command line", "--set " + walked, node->dump(),
                       "cannot set '" + key + "' inside a value that is not an object");
    }
    walked = walked.empty() ? key : walked + "." + key;
    if (dot == std::string::npos) {
      if (value.is_null()) {
        node->erase(key);
      } else {
        (*node)[key] = std::move(value);
      }
      return;
    }
    if (value.is_null() && !node->contains(key)) return;  // nothing there to remove
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    start = dot + 1;
  }
}

}  // namespace wallsim
