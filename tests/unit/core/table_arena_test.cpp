#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <vector>

#include "sim/core/table_arena.hpp"

using wallsim::ArenaAllocator;
using wallsim::TableArena;

namespace {

using Table = std::vector<std::uint64_t, ArenaAllocator<std::uint64_t>>;

std::uintptr_t address(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p);
}

}  // namespace

TEST_CASE("tables of one arena are carved front to back, each aligned", "[core][arena]") {
  const auto arena = std::make_shared<TableArena>(1000);
  CHECK(arena->capacity() >= 1000);
  const Table a(3, 7, ArenaAllocator<std::uint64_t>(arena));  // 24 bytes
  const Table b(5, 9, ArenaAllocator<std::uint64_t>(arena));
  CHECK(arena->holds(a.data()));
  CHECK(arena->holds(b.data()));
  // b follows a directly: 24 bytes is already a multiple of alignof(uint64_t).
  CHECK(address(b.data()) - address(a.data()) == 3 * sizeof(std::uint64_t));
  CHECK(arena->used() == 8 * sizeof(std::uint64_t));
  CHECK(b[4] == 9);
#if defined(__linux__)
  // Huge-page alignment: the mapping starts on a 2 MiB boundary.
  CHECK(address(a.data()) % (std::uintptr_t{2} << 20) == 0);
#endif
}

TEST_CASE("a table that outgrows its arena moves to the heap with its contents", "[core][arena]") {
  const auto arena = std::make_shared<TableArena>(64);
  Table table{ArenaAllocator<std::uint64_t>(arena)};
  table.reserve(4);
  REQUIRE(arena->holds(table.data()));
  // Push well past the arena's capacity (at least 64 bytes, rounded up; 2 MiB on Linux) so
  // that growth must leave it; values written before stay.
  const std::size_t n = arena->capacity() / sizeof(std::uint64_t) + 10;
  for (std::size_t i = 0; i < n; ++i) table.push_back(i);
  CHECK_FALSE(arena->holds(table.data()));
  std::vector<std::uint64_t> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  CHECK(std::equal(table.begin(), table.end(), expected.begin(), expected.end()));
}

TEST_CASE("a table keeps its arena alive after every other owner is gone", "[core][arena]") {
  Table moved;
  {
    auto arena = std::make_shared<TableArena>(4096);
    Table table(100, 42, ArenaAllocator<std::uint64_t>(arena));
    moved = std::move(table);
  }
  // The allocator travelled with the move and shares the arena: the memory is still mapped.
  const auto allocator = moved.get_allocator();
  REQUIRE(allocator.arena());
  CHECK(allocator.arena().use_count() == 2);  // the table's allocator and this copy
  CHECK(allocator.arena()->holds(moved.data()));
  CHECK(moved[99] == 42);
}

TEST_CASE("a copy of a table goes to the heap and leaves the arena untouched", "[core][arena]") {
  const auto arena = std::make_shared<TableArena>(4096);
  const Table table(4, 5, ArenaAllocator<std::uint64_t>(arena));
  const std::size_t used = arena->used();
  const Table copy = table;
  CHECK_FALSE(copy.get_allocator().arena());
  CHECK_FALSE(arena->holds(copy.data()));
  CHECK(arena->used() == used);
  CHECK(copy == table);
}

TEST_CASE("a table without an arena uses the heap", "[core][arena]") {
  Table table(10, 1);
  CHECK_FALSE(table.get_allocator().arena());
  CHECK(std::accumulate(table.begin(), table.end(), std::uint64_t{0}) == 10);
}

TEST_CASE("a large vector on huge pages starts on a huge-page boundary and keeps its contents",
          "[core][arena]") {
  using Big = std::vector<std::uint64_t, wallsim::HugePageAllocator<std::uint64_t>>;
  // 2^20 entries of 8 bytes = 8 MiB: four huge pages, mapped on their own.
  Big big(std::size_t{1} << 20);
  std::iota(big.begin(), big.end(), std::uint64_t{0});
  CHECK(address(big.data()) % wallsim::kHugePageBytes == 0);
  // Growing past the block moves the entries to a new one: sum 0 + 1 + ... + (2^20 - 1).
  big.push_back(0);
  const std::uint64_t n = std::uint64_t{1} << 20;
  CHECK(std::accumulate(big.begin(), big.end(), std::uint64_t{0}) == n * (n - 1) / 2);
  CHECK(address(big.data()) % wallsim::kHugePageBytes == 0);
}

TEST_CASE("a vector under one huge page stays on the heap", "[core][arena]") {
  using Small = std::vector<std::uint64_t, wallsim::HugePageAllocator<std::uint64_t>>;
  Small small(1000, 3);  // 8,000 bytes
  CHECK(std::accumulate(small.begin(), small.end(), std::uint64_t{0}) == 3000);
  CHECK(wallsim::huge_page_rounded(8000) == wallsim::kHugePageBytes);
  CHECK(wallsim::huge_page_rounded(0) == wallsim::kHugePageBytes);
  CHECK(wallsim::huge_page_rounded(wallsim::kHugePageBytes + 1) == 2 * wallsim::kHugePageBytes);
}

#if defined(__linux__)
TEST_CASE("giving back unfilled room keeps the huge page the filled part ends in whole",
          "[core][arena]") {
  // A block of three huge pages and 64 KiB more (on 4 KiB pages), every byte written.
  const std::size_t huge = wallsim::kHugePageBytes;
  const std::size_t bytes = 3 * huge + 64 * 1024;
  auto* block = static_cast<unsigned char*>(wallsim::map_huge_pages(bytes));
  const auto fill = [&] { std::fill(block, block + bytes, static_cast<unsigned char>(0xab)); };
  const auto reads = [&](std::size_t from, std::size_t to) {  // the value every byte holds, or -1
    const unsigned char first = block[from];
    const bool same =
        std::all_of(block + from, block + to, [&](unsigned char b) { return b == first; });
    return same ? int{first} : -1;
  };
  // Filled up to 100 bytes into the second huge page: the rest of that page is kept (still
  // written), the third huge page and the 4 KiB tail are given back (anonymous memory given
  // back with MADV_DONTNEED reads as zeros).
  fill();
  wallsim::release_unused(block, huge + 100, bytes);
  CHECK(reads(0, 2 * huge) == 0xab);
  CHECK(reads(2 * huge, bytes) == 0);
  // Filled into the 4 KiB tail past the last whole huge page: only 4 KiB pages past the one
  // the filled part ends in are given back.
  fill();
  wallsim::release_unused(block, 3 * huge + 100, bytes);
  CHECK(reads(0, 3 * huge + 4096) == 0xab);
  CHECK(reads(3 * huge + 4096, bytes) == 0);
  wallsim::unmap_huge_pages(block, bytes);
}
#endif
