#include "models/sweep/sweep_journal.hpp"

#include <istream>
#include <ostream>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

std::vector<std::string> read_lines(std::istream& in, bool& last_line_complete) {
  std::vector<std::string> lines;
  std::string line;
  last_line_complete = true;
  while (std::getline(in, line)) {
    lines.push_back(line);
    last_line_complete = !in.eof();  // getline hit EOF before a '\n': the line was cut short
  }
  return lines;
}

}  // namespace

void write_journal_header(std::ostream& out, const std::string& fingerprint,
                          const ShardSpec& shard) {
  out << nlohmann::json{{"wallsim_sweep_journal", 1},
                        {"fingerprint", fingerprint},
                        {"shard", to_string(shard)}}
             .dump()
      << "\n"
      << std::flush;
}

void write_journal_row(std::ostream& out, const SweepRow& row) {
  out << row_to_json(row).dump() << "\n" << std::flush;
}

std::vector<SweepRow> read_journal(std::istream& in, const std::string& fingerprint,
                                   const ShardSpec& shard, const std::string& where) {
  bool complete = true;
  const auto lines = read_lines(in, complete);
  if (lines.empty()) return {};
  const auto header = nlohmann::json::parse(lines.front(), nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("fingerprint")) {
    throw InputError(where, "", "", "not a wallsim sweep journal");
  }
  if (header.value("fingerprint", "") != fingerprint ||
      header.value("shard", "") != to_string(shard)) {
    throw InputError(where, "fingerprint", header.value("fingerprint", ""),
                     "belongs to another sweep (config, space or shard differ): "
                     "drop --resume to start afresh");
  }
  std::vector<SweepRow> rows;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    const bool last = i + 1 == lines.size();
    const auto json = nlohmann::json::parse(lines[i], nullptr, false);
    if (last && (!complete || json.is_discarded())) break;  // cut short by the interruption
    if (json.is_discarded()) {
      throw InputError(where, "line " + std::to_string(i + 1), "", "malformed journal line");
    }
    rows.push_back(row_from_json(json, where));
  }
  return rows;
}

}  // namespace wallsim::models
