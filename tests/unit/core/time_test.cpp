#include <catch2/catch.hpp>

#include "sim/core/time.hpp"

using wallsim::Time;

TEST_CASE("time converts between units exactly in integer picoseconds", "[core][time]") {
  CHECK(Time::from_us(1.0).ps() == 1'000'000);
  CHECK(Time::from_ns(2.5).ps() == 2'500);
  CHECK(Time::from_seconds(1.0).ps() == 1'000'000'000'000);
  CHECK(Time::from_ps(1'500).ns() == Approx(1.5));
}

TEST_CASE("a positive duration never rounds down to zero", "[core][time]") {
  // 1e-15 s is a thousandth of a picosecond; it must still order after zero.
  CHECK(Time::from_seconds(1e-15) > Time::zero());
  CHECK(Time::from_seconds(-1.0) == Time::zero());
}
