#include "sim/core/table_arena.hpp"

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace wallsim {
namespace {

constexpr std::size_t kSmallPageBytes = 4096;

std::size_t round_up(std::size_t bytes, std::size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

void* map_huge_pages(std::size_t bytes) {
#if defined(__linux__)
  // Map one huge page more than needed and unmap the unaligned head and tail, so that the
  // block starts on a 2 MiB boundary. Its whole 2 MiB ranges get huge pages; a last partial
  // one stays on small pages, so the block holds no more memory than it is asked for.
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes, kSmallPageBytes);
  const std::size_t reserved = size + kHugePageBytes;
  void* block = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(block);
  const std::uintptr_t aligned = round_up(start, kHugePageBytes);
  if (aligned > start) munmap(block, aligned - start);
  const std::size_t tail = start + reserved - (aligned + size);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  // Advice only: a kernel without THP leaves the block on small pages.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
#else
  return ::operator new(bytes == 0 ? 1 : bytes);
#endif
}

void unmap_huge_pages(void* block, std::size_t bytes) noexcept {
#if defined(__linux__)
  munmap(block, round_up(bytes == 0 ? 1 : bytes, kSmallPageBytes));
#else
  (void)bytes;
  ::operator delete(block);
#endif
}

void release_unused(void* block, std::size_t used, std::size_t bytes) noexcept {
#if defined(__linux__)
  // The block's whole 2 MiB ranges are huge pages. One that `used` ends inside is kept whole:
  // it is resident from its first touch anyway, and releasing its tail would split it into
  // 4 KiB pages; on the virtual machine of bench/README.md the next access to each of those
  // then cost microseconds, far more than the pass over the table that made it.
  const std::size_t to = round_up(bytes == 0 ? 1 : bytes, kSmallPageBytes);
  const std::size_t huge_end = to / kHugePageBytes * kHugePageBytes;
  const std::size_t from =
      used < huge_end ? round_up(used, kHugePageBytes) : round_up(used, kSmallPageBytes);
  if (from < to) madvise(static_cast<std::byte*>(block) + from, to - from, MADV_DONTNEED);
#else
  (void)block;
  (void)used;
  (void)bytes;
#endif
}

std::size_t huge_page_rounded(std::size_t bytes) {
  return round_up(bytes == 0 ? 1 : bytes, kHugePageBytes);
}

TableArena::TableArena(std::size_t bytes) {
  size_ = huge_page_rounded(bytes);
  base_ = static_cast<std::byte*>(map_huge_pages(size_));
}

TableArena::~TableArena() {
  unmap_huge_pages(base_, size_);
}

void* TableArena::take(std::size_t bytes, std::size_t align) {
  std::size_t used = used_.load();
  for (;;) {
    const std::size_t offset = round_up(used, align);
    if (offset > size_ || bytes > size_ - offset) return nullptr;
    if (used_.compare_exchange_weak(used, offset + bytes)) return base_ + offset;
  }
}

bool TableArena::holds(const void* block) const {
  const auto address = reinterpret_cast<std::uintptr_t>(block);
  const auto base = reinterpret_cast<std::uintptr_t>(base_);
  return address >= base && address - base < size_;
}

}  // namespace wallsim
