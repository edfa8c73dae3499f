#include <catch2/catch.hpp>

#include "sim/core/byte_size.hpp"
#include "sim/core/input_error.hpp"

using namespace wallsim;

TEST_CASE("byte sizes accept plain, binary and SI units", "[core][bytes]") {
  CHECK(parse_byte_size("1048576", "--bytes") == 1048576);
  CHECK(parse_byte_size("4KiB", "--bytes") == 4096);
  CHECK(parse_byte_size("256MiB", "--bytes") == 256ULL << 20);
  CHECK(parse_byte_size("1GB", "--bytes") == 1'000'000'000ULL);
  CHECK(parse_byte_size("1.5GiB", "--bytes") == 3ULL << 29);
}

TEST_CASE("a size range doubles from its start to its end, inclusive", "[core][bytes]") {
  const auto sizes = parse_byte_sizes("1KiB:8KiB", "--bytes");
  CHECK(sizes == std::vector<std::uint64_t>{1024, 2048, 4096, 8192});
  // 1 KiB to 8 GiB is 2^10 .. 2^33: 24 sizes.
  CHECK(parse_byte_sizes("1KiB:8GiB", "--bytes").size() == 24);
}

TEST_CASE("malformed sizes name the option and the value", "[core][bytes]") {
  // ".B" was found by fuzz_text (fuzz/regressions/fuzz_text/size-without-digits): a number
  // with no digit reached std::stod, which throws std::invalid_argument.
  for (const char* bad : {"", "abc", "12XB", "0", "1..2KiB", "-4", ".B", ".", ".:1KiB"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_byte_size(bad, "--bytes"), InputError);
  }
  CHECK_THROWS_WITH(parse_byte_size("12XB", "--bytes"),
                    Catch::Contains("--bytes") && Catch::Contains("12XB"));
  CHECK_THROWS_AS(parse_byte_sizes("8KiB:1KiB", "--bytes"), InputError);
}

TEST_CASE("sizes print in binary units", "[core][bytes]") {
  CHECK(format_bytes(256.0 * (1 << 20)) == "256 MiB");
  CHECK(format_bytes(512) == "512 B");
  CHECK(format_bytes(1.5 * (1 << 30)) == "1.50 GiB");
}
