// `wallsim sweep --mpi`: the points spread over MPI ranks (rank r runs shard r/size), the
// results gathered on rank 0. Built only when CMake finds MPI (WALLSIM_WITH_MPI); otherwise
// --mpi is rejected with a message saying how to build it in.
#pragma once

#include <functional>
#include <optional>

#include "models/sweep/sweep_report.hpp"

namespace wallsim::cli {

bool mpi_built();

// Runs `local(shard, is_root)` on every rank, gathers the reports on rank 0 and merges them.
// Rank 0 gets the merged report, the other ranks nullopt. An error on any rank is rethrown on
// rank 0 as InputError (other ranks return nullopt).
std::optional<models::SweepReport> run_sweep_over_mpi(
    const std::function<models::SweepReport(const models::ShardSpec&, bool is_root)>& local);

}  // namespace wallsim::cli
