#include "models/allocator_memory.hpp"

#include <cmath>

namespace wallsim::models {
namespace {

using C = CachingAllocatorConstants;

double round_up(double bytes, double multiple) {
  return std::ceil(bytes / multiple) * multiple;
}

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kKiB = 1024.0;

}  // namespace

double rounded_block_bytes(double request_bytes) {
  if (request_bytes < C::kMinBlockSize) return C::kMinBlockSize;
  return round_up(request_bytes, C::kMinBlockSize);
}

double segment_bytes(double request_bytes) {
  if (request_bytes <= C::kSmallSize) return C::kSmallBuffer;
  if (request_bytes < C::kMinLargeAlloc) return C::kLargeBuffer;
  return round_up(request_bytes, C::kRoundLarge);
}

double torch_cublas_workspace_bytes(int compute_capability) {
  // ":4096:8" for major 9-12, ":4096:2:16:8" otherwise (size in KiB, then count).
  if (compute_capability >= 90 && compute_capability < 130) return 4096 * kKiB * 8;
  return 4096 * kKiB * 2 + 16 * kKiB * 8;
}

double te_cublas_workspace_bytes(int compute_capability, bool tp_comm_overlap) {
  const double one = compute_capability >= 90 ? 32 * kMiB : 4 * kMiB;
  constexpr double kUserbufferStreams = 3;
  return tp_comm_overlap ? kUserbufferStreams * one : one;
}

double nccl_bytes_per_channel_peer() {
  constexpr double kSimple = 4 * kMiB;            // DEFAULT_BUFFSIZE, 1 << 22
  constexpr double kLl128 = 120.0 * 640 * 8 * 8;  // ELEMS_PER_THREAD·MAX_NTHREADS·STEPS·8 B
  constexpr double kLl = 8.0 * 512 * 8 * 16;      // LINES_PER_THREAD·MAX_NTHREADS·STEPS·16 B
  return kSimple + kLl128 + kLl;
}

double nccl_communicator_bytes(int channels, int peers) {
  return static_cast<double>(channels) * static_cast<double>(peers) * nccl_bytes_per_channel_peer();
}

double allocator_slack_bytes(const AllocatorSettings& settings, double largest_layer_bytes) {
  const double streams = static_cast<double>(settings.streams);
  const double small_pool = streams * C::kSmallBuffer;
  const double fragmentation =
      settings.expandable_segments ? streams * C::kLargeBuffer / 2 : largest_layer_bytes;
  return small_pool + fragmentation;
}

}  // namespace wallsim::models
