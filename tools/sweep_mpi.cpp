#include "tools/sweep_mpi.hpp"

#include "sim/core/input_error.hpp"

#ifdef WALLSIM_WITH_MPI
#include <mpi.h>

#include <exception>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#endif

namespace wallsim::cli {

#ifdef WALLSIM_WITH_MPI

namespace {

// Every rank's text, concatenated on rank 0 (empty elsewhere).
std::vector<std::string> gather_text(const std::string& text, int rank, int size) {
  const int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<std::size_t>(size));
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> offsets(static_cast<std::size_t>(size), 0);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[static_cast<std::size_t>(r)] = total;
    total += lengths[static_cast<std::size_t>(r)];
  }
  std::string all(rank == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, MPI_COMM_WORLD);
  std::vector<std::string> parts;
  if (rank != 0) return parts;
  for (int r = 0; r < size; ++r) {
    parts.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(r)]),
                               static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)])));
  }
  return parts;
}

std::string run_local(
    const std::function<models::SweepReport(const models::ShardSpec&, bool)>& local,
    const models::ShardSpec& shard, bool root) {
  try {
    return models::report_to_json(local(shard, root)).dump();
  } catch (const std::exception& e) {
    return nlohmann::json{{"error", e.what()}}.dump();
  }
}

std::optional<models::SweepReport> merge_on_root(const std::vector<std::string>& parts) {
  std::vector<models::SweepReport> reports;
  std::vector<std::string> names;
  for (std::size_t r = 0; r < parts.size(); ++r) {
    const auto json = nlohmann::json::parse(parts[r]);
    names.push_back("MPI rank " + std::to_string(r));
    if (json.contains("error")) {
      throw InputError(names.back() + ": " + json.at("error").get<std::string>());
    }
    reports.push_back(models::report_from_json(json, names.back()));
  }
  return models::merge_reports(reports, names);
}

}  // namespace

bool mpi_built() {
  return true;
}

std::optional<models::SweepReport> run_sweep_over_mpi(
    const std::function<models::SweepReport(const models::ShardSpec&, bool is_root)>& local) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string mine = run_local(local, {rank, size}, rank == 0);
  const auto parts = gather_text(mine, rank, size);
  MPI_Finalize();
  if (rank != 0) return std::nullopt;
  return merge_on_root(parts);
}

#else

bool mpi_built() {
  return false;
}

std::optional<models::SweepReport> run_sweep_over_mpi(
    const std::function<models::SweepReport(const models::ShardSpec&, bool)>&) {
  throw InputError("command line", "--mpi", "",
                   "this wallsim was built without MPI (install libopenmpi-dev and rebuild; "
                   "CMake option WALLSIM_MPI=AUTO|ON)");
}

#endif

}  // namespace wallsim::cli
