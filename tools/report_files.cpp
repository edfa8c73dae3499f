#include "tools/report_files.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "sim/core/input_error.hpp"
#include "sim/report/html_report.hpp"

namespace wallsim::cli {

std::uintmax_t write_output_file(const std::string& path, const std::string& option,
                                 const std::function<void(std::ostream&)>& write) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code error;
  if (!parent.empty()) std::filesystem::create_directories(parent, error);
  std::ofstream out(path, std::ios::binary);
  if (error || !out) throw InputError("command line", option, path, "cannot write this file");
  write(out);
  out.close();
  if (!out) throw InputError("command line", option, path, "writing the file failed");
  return std::filesystem::file_size(path, error);
}

std::string read_input_file(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("command line", option, path, "cannot read this file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void render_report(const std::string& summary_path, const std::string& timeline_path,
                   const std::string& html_path) {
  const std::string summary = read_input_file(summary_path, "SUMMARY");
  const std::string timeline = std::filesystem::exists(timeline_path)
                                   ? read_input_file(timeline_path, "SUMMARY")
                                   : std::string();
  std::ostringstream page;
  try {
    write_html_report(summary, timeline, page);
  } catch (const std::invalid_argument& error) {
    throw InputError("command line", "SUMMARY", summary_path, error.what());
  }
  write_output_file(html_path, "--out", [&](std::ostream& out) { out << page.str(); });
}

std::string human_size(std::uintmax_t bytes) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return buffer;
}

}  // namespace wallsim::cli
