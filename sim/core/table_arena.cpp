#include "sim/core/table_arena.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace wallsim {
namespace {

constexpr std::size_t kSmallPageBytes = 4096;

std::size_t round_up(std::size_t bytes, std::size_t unit) {
  return (bytes + unit - 1) / unit * unit;
}

#if defined(__linux__)

// Blocks given back by unmap_huge_pages, kept mapped for a later map_huge_pages that fits in one.
// A sweep simulates point after point with tables of about the same sizes, and the vectors of one
// simulation grow by doubling; a fresh mapping costs the kernel a fault and a cleared 2 MiB page
// for every huge page touched, which on a virtual machine took a fifth of a deep pipeline's
// simulation. A block is handed out again dirty (its users are vectors, which construct what
// they hold) with the part past the request given back to the system, and when no kept block
// is large enough, kept blocks of at least the new block's size are unmapped first: the memory
// the process holds, kept blocks included, then grows only where its tables in use outgrow
// every earlier high-water mark.
class BlockCache {
 public:
  // A kept block of at least `size` bytes (whole small pages), the smallest there is, or nullptr.
  void* take(std::size_t size) {
    const std::lock_guard lock(mutex_);
    const auto it = kept_.lower_bound(size);
    if (it == kept_.end()) {
      // None fits: make room for the new mapping, the largest kept blocks first.
      std::size_t freed = 0;
      while (!kept_.empty() && freed < size) {
        const auto last = std::prev(kept_.end());
        munmap(last->second, last->first);
        freed += last->first;
        kept_bytes_ -= last->first;
        kept_.erase(last);
      }
      return nullptr;
    }
    const std::size_t real = it->first;
    void* block = it->second;
    kept_bytes_ -= real;
    kept_.erase(it);
    if (real > size) {
      madvise(static_cast<std::byte*>(block) + size, real - size, MADV_DONTNEED);
      larger_.emplace(block, real);
    }
    return block;
  }

  // Keeps a block of `size` bytes (as asked of map_huge_pages) for reuse.
  void keep(void* block, std::size_t size) noexcept {
    const std::lock_guard lock(mutex_);
    if (const auto it = larger_.find(block); it != larger_.end()) {
      size = it->second;
      larger_.erase(it);
    }
    try {
      kept_.emplace(size, block);
      kept_bytes_ += size;
    } catch (...) {  // no room to note it: give it back instead
      munmap(block, size);
    }
  }

  void release_all() {
    const std::lock_guard lock(mutex_);
    for (const auto& [size, block] : kept_) munmap(block, size);
    kept_.clear();
    kept_bytes_ = 0;
  }

  std::size_t kept_bytes() {
    const std::lock_guard lock(mutex_);
    return kept_bytes_;
  }

 private:
  std::mutex mutex_;
  std::multimap<std::size_t, void*> kept_;  // size -> block
  std::map<void*, std::size_t> larger_;     // handed out larger than asked: its real size
  std::size_t kept_bytes_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: blocks may be freed at exit
  return *cache;
}

#endif

}  // namespace

void* map_huge_pages(std::size_t bytes) {
#if defined(__linux__)
  // Map one huge page more than needed and unmap the unaligned head and tail, so that the
  // block starts on a 2 MiB boundary. Its whole 2 MiB ranges get huge pages; a last partial
  // one stays on small pages, so the block holds no more memory than it is asked for.
  const std::size_t size = round_up(bytes == 0 ? 1 : bytes, kSmallPageBytes);
  if (void* kept = block_cache().take(size)) return kept;
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
  block_cache().keep(block, round_up(bytes == 0 ? 1 : bytes, kSmallPageBytes));
#else
  (void)bytes;
  ::operator delete(block);
#endif
}

void release_unused(void* block, std::size_t used, std::size_t bytes) noexcept {
#if defined(__linux__)
  const std::size_t from = round_up(used, kSmallPageBytes);
  const std::size_t to = round_up(bytes == 0 ? 1 : bytes, kSmallPageBytes);
  if (from < to) madvise(static_cast<std::byte*>(block) + from, to - from, MADV_DONTNEED);
#else
  (void)block;
  (void)used;
  (void)bytes;
#endif
}

void release_kept_huge_pages() noexcept {
#if defined(__linux__)
  block_cache().release_all();
#endif
}

std::size_t kept_huge_page_bytes() {
#if defined(__linux__)
  return block_cache().kept_bytes();
#else
  return 0;
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
