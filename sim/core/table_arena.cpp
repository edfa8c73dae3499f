#include "sim/core/table_arena.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace wallsim {
namespace {

constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

std::size_t round_up(std::size_t bytes, std::size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

}  // namespace

TableArena::TableArena(std::size_t bytes) {
#if defined(__linux__)
  // Map one huge page more than needed and unmap the unaligned head and tail, so that the
  // arena starts on a 2 MiB boundary and every huge page of it lies inside the mapping.
  size_ = round_up(bytes == 0 ? 1 : bytes, kHugePageBytes);
  const std::size_t reserved = size_ + kHugePageBytes;
  void* block = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) throw std::bad_alloc();
  const auto start = reinterpret_cast<std::uintptr_t>(block);
  const std::uintptr_t aligned = round_up(start, kHugePageBytes);
  if (aligned > start) munmap(block, aligned - start);
  const std::size_t tail = start + reserved - (aligned + size_);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size_), tail);
  base_ = reinterpret_cast<std::byte*>(aligned);
  mapped_ = size_;
  // Advice only: a kernel without THP leaves the arena on small pages.
  madvise(base_, size_, MADV_HUGEPAGE);
#else
  size_ = bytes;
  base_ = static_cast<std::byte*>(::operator new(size_ == 0 ? 1 : size_));
#endif
}

TableArena::~TableArena() {
#if defined(__linux__)
  if (mapped_ > 0) {
    munmap(base_, mapped_);
    return;
  }
#endif
  ::operator delete(base_);
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
