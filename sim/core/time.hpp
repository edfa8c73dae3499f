// Simulated time.
//
// Time is an integer count of picoseconds (int64: about 106 days of simulated time), so
// event ordering is exact and runs repeat bit for bit. Conversions to and from seconds are
// named; arithmetic between Time values stays integral.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace wallsim {

class Time {
 public:
  constexpr Time() = default;

  static constexpr Time from_ps(std::int64_t ps) { return Time(ps); }
  static constexpr Time from_ns(double ns) { return from_ps_rounded(ns * 1e3); }
  static constexpr Time from_us(double us) { return from_ps_rounded(us * 1e6); }
  static constexpr Time from_seconds(double s) { return from_ps_rounded(s * 1e12); }
  static constexpr Time zero() { return Time(0); }
  static constexpr Time max() { return Time(std::numeric_limits<std::int64_t>::max()); }

  constexpr std::int64_t ps() const { return ps_; }
  constexpr double ns() const { return static_cast<double>(ps_) * 1e-3; }
  constexpr double us() const { return static_cast<double>(ps_) * 1e-6; }
  constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }

  constexpr Time operator+(Time o) const { return Time(ps_ + o.ps_); }
  constexpr Time operator-(Time o) const { return Time(ps_ - o.ps_); }
  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  constexpr auto operator<=>(const Time&) const = default;

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  // Rounds up so that a positive duration never collapses to zero picoseconds.
  static constexpr Time from_ps_rounded(double ps) {
    if (!(ps > 0)) return Time(0);
    if (ps >= 9.2e18) return max();
    return Time(static_cast<std::int64_t>(std::ceil(ps)));
  }

  std::int64_t ps_ = 0;
};

constexpr Time max(Time a, Time b) {
  return a < b ? b : a;
}
constexpr Time min(Time a, Time b) {
  return a < b ? a : b;
}

}  // namespace wallsim
