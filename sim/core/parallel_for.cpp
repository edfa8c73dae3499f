#include "sim/core/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace wallsim {

void parallel_for(std::int64_t count, int jobs, const std::function<void(std::int64_t)>& body) {
  std::atomic<std::int64_t> next{0};
  std::mutex failure_mutex;
  std::int64_t failed_at = count;
  std::exception_ptr failure;
  const auto worker = [&] {
    for (std::int64_t i = next++; i < count; i = next++) {
      try {
        body(i);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (i < failed_at) {
          failed_at = i;
          failure = std::current_exception();
        }
        next = count;
      }
    }
  };
  const std::int64_t threads = std::min<std::int64_t>(count, std::max(1, jobs));
  std::vector<std::thread> pool;
  for (std::int64_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& thread : pool) thread.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace wallsim
