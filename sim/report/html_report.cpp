#include "sim/report/html_report.hpp"

#include <ostream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/report/json_text.hpp"
#include "sim/report/report_assets.hpp"

namespace wallsim {
namespace {

[[noreturn]] void reject_json(std::string_view text, const char* what) {
  try {
    // Parsed again only to name the error accept() found.
    [[maybe_unused]] const auto document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string(what) + " is not valid JSON: " + e.what());
  }
  throw std::invalid_argument(std::string(what) + " is not valid JSON");
}

// `text` made safe inside a <script> element: "</" cannot end it early.
std::string script_safe(std::string text) {
  for (std::size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at)) {
    text.replace(at, 2, "<\\/");
  }
  return text;
}

// Compact JSON safe inside a <script> element.
std::string embeddable(std::string_view text, const char* what) {
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string(what) + " is not valid JSON: " + e.what());
  }
  return script_safe(document.dump());
}

// A large document embedded as it was written, once checked to be JSON: the timeline of a deep
// pipeline runs to tens of megabytes, which a parse into a tree and a dump would take seconds
// to copy.
std::string embeddable_as_written(std::string_view text, const char* what) {
  if (!nlohmann::json::accept(text)) reject_json(text, what);
  return script_safe(std::string(text));
}

std::string escape_html(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '<')
      escaped += "&lt;";
    else if (c == '>')
      escaped += "&gt;";
    else if (c == '&')
      escaped += "&amp;";
    else
      escaped += c;
  }
  return escaped;
}

// Reports a script error on the page and in the DOM, before the report's script runs.
constexpr const char* kErrorHandler = R"(
window.addEventListener("error", function (e) {
  document.body.dataset.error = String(e.message || e);
  var box = document.getElementById("error");
  box.hidden = false;
  box.textContent = "Report script error: " + (e.message || e);
});)";

}  // namespace

void write_html_report(std::string_view summary_json, std::string_view timeline_json,
                       std::ostream& out) {
  const std::string summary = embeddable(summary_json, "summary");
  const std::string timeline =
      timeline_json.empty() ? "null" : embeddable_as_written(timeline_json, "timeline");
  const auto parsed = nlohmann::json::parse(summary);
  const std::string title = "wallsim: " + parsed.value("model", std::string("run")) + " on " +
                            std::to_string(parsed.value("num_gpus", 0)) + " GPUs";
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<title>" << escape_html(title) << "</title>\n<style>\n"
      << report_assets::kCss << "</style>\n</head>\n<body>\n"
      << "<div id=\"error\" hidden></div>\n<main id=\"app\"></main>\n"
      << "<script type=\"application/json\" id=\"summary-data\">" << summary << "</script>\n"
      << "<script type=\"application/json\" id=\"timeline-data\">" << timeline << "</script>\n"
      << "<script>" << kErrorHandler << "</script>\n<script>\n"
      << report_assets::kScript << "</script>\n</body>\n</html>\n";
}

}  // namespace wallsim
