// Runs a loop's iterations on a few threads: the sweep's points, a sampled run's steps, the
// what-if re-simulations of one run.
#pragma once

#include <cstdint>
#include <functional>

namespace wallsim {

// Runs body(i) for i in [0, count) on up to `jobs` threads (the calling one among them) that
// take i in order from one counter. After a body throws no further i is started; once the
// running ones end, the exception of the lowest i that threw is rethrown.
void parallel_for(std::int64_t count, int jobs, const std::function<void(std::int64_t)>& body);

}  // namespace wallsim
