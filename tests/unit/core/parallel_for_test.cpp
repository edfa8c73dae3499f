#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/parallel_for.hpp"

TEST_CASE("parallel_for runs every index once, whatever the threads", "[core][parallel]") {
  for (const int jobs : {1, 2, 7}) {
    std::vector<std::atomic<int>> runs(100);
    wallsim::parallel_for(100, jobs, [&](std::int64_t i) { ++runs[static_cast<std::size_t>(i)]; });
    for (const auto& r : runs) CHECK(r.load() == 1);
  }
  wallsim::parallel_for(0, 4, [](std::int64_t) { FAIL("no index to run"); });
}

TEST_CASE("parallel_for rethrows the lowest failing index and starts nothing after it",
          "[core][parallel]") {
  // One thread takes the indices in order: 3 throws, so 4 and later never start.
  std::vector<int> started;
  const auto body = [&](std::int64_t i) {
    started.push_back(static_cast<int>(i));
    if (i >= 3) throw std::runtime_error("index " + std::to_string(i));
  };
  CHECK_THROWS_WITH(wallsim::parallel_for(10, 1, body), "index 3");
  CHECK(started == std::vector<int>{0, 1, 2, 3});
  // With threads, every index fails: whichever ran, index 0 is among them and is reported.
  CHECK_THROWS_WITH(
      wallsim::parallel_for(
          10, 3, [](std::int64_t i) { throw std::runtime_error("index " + std::to_string(i)); }),
      "index 0");
}
