// The resume journal of a sweep (DIR/sweep.journal.jsonl): one JSON line naming the sweep
// (fingerprint and shard), then one JSON line per simulated point, appended and flushed as each
// point finishes. `--resume` reads it back and simulates only the points it lacks. A last line
// cut short by an interruption is ignored (that point is simulated again).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_shard.hpp"

namespace wallsim::models {

void write_journal_header(std::ostream& out, const std::string& fingerprint,
                          const ShardSpec& shard);
void write_journal_row(std::ostream& out, const SweepRow& row);

// The rows of a journal. Throws InputError (naming `where`) when the journal belongs to another
// sweep or shard, or a line other than the last is malformed.
std::vector<SweepRow> read_journal(std::istream& in, const std::string& fingerprint,
                                   const ShardSpec& shard, const std::string& where);

}  // namespace wallsim::models
