#include "tools/sweep_output.hpp"

#include <filesystem>
#include <fstream>

#include <spdlog/spdlog.h>

#include "models/sweep/sweep_html.hpp"
#include "models/sweep/sweep_writers.hpp"
#include "sim/core/input_error.hpp"

namespace wallsim::cli {
namespace {

void make_dir(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) throw InputError("command line", "--out", dir, "cannot create: " + error.message());
}

template <typename Writer>
void write_file(const std::string& path, Writer&& writer) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError("command line", "--out", path, "cannot write");
  writer(out);
  if (!out) throw InputError("command line", "--out", path, "write failed");
}

}  // namespace

void write_report_files(const models::SweepReport& report, const std::string& dir) {
  make_dir(dir);
  write_file(dir + "/sweep.csv", [&](std::ostream& out) { models::write_sweep_csv(report, out); });
  write_file(dir + "/sweep.json",
             [&](std::ostream& out) { models::write_sweep_json(report, out); });
  write_file(dir + "/sweep.html",
             [&](std::ostream& out) { models::write_sweep_html(report, out); });
  spdlog::info("wrote {}/sweep.csv, sweep.json and sweep.html", dir);
}

void write_row_configs(const models::SweepBase& base, const models::SweepReport& report,
                       const std::string& dir) {
  make_dir(dir + "/configs");
  for (const auto& row : report.rows) {
    write_file(dir + "/configs/" + row.id + ".json", [&](std::ostream& out) {
      out << models::point_config(base, row.point).dump(2) << "\n";
    });
  }
}

std::string journal_path(const std::string& dir, const models::ShardSpec& shard) {
  if (shard.count == 1) return dir + "/sweep.journal.jsonl";
  return dir + "/sweep.journal." + std::to_string(shard.index) + "-of-" +
         std::to_string(shard.count) + ".jsonl";
}

}  // namespace wallsim::cli
