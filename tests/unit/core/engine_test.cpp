#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/core/engine.hpp"

using wallsim::Engine;
using wallsim::Time;

TEST_CASE("events run in time order, ties in scheduling order", "[core][engine]") {
  Engine engine;
  std::vector<std::string> order;
  engine.schedule_at(Time::from_us(2), [&] { order.push_back("b@2"); });
  engine.schedule_at(Time::from_us(1), [&] { order.push_back("a@1"); });
  engine.schedule_at(Time::from_us(2), [&] { order.push_back("c@2"); });
  engine.schedule_at(Time::from_us(1), [&] { order.push_back("d@1"); });
  CHECK(engine.run() == 4);
  CHECK(order == std::vector<std::string>{"a@1", "d@1", "b@2", "c@2"});
  CHECK(engine.now() == Time::from_us(2));
}

TEST_CASE("an event may schedule more events, including at the current time", "[core][engine]") {
  Engine engine;
  std::vector<int> order;
  engine.schedule_at(Time::from_us(1), [&] {
    order.push_back(1);
    engine.schedule_after(Time::zero(), [&] { order.push_back(3); });
  });
  engine.schedule_at(Time::from_us(1), [&] { order.push_back(2); });
  engine.run();
  // The nested event was scheduled after event 2, so it runs after it at the same time.
  CHECK(order == std::vector<int>{1, 2, 3});
}

TEST_CASE("a cancelled event never runs and cannot be cancelled twice", "[core][engine]") {
  Engine engine;
  int runs = 0;
  const auto id = engine.schedule_at(Time::from_us(5), [&] { ++runs; });
  engine.schedule_at(Time::from_us(6), [&] { ++runs; });
  CHECK(engine.cancel(id));
  CHECK_FALSE(engine.cancel(id));
  CHECK(engine.run() == 1);
  CHECK(runs == 1);
  CHECK(engine.empty());
}

TEST_CASE("run_until leaves later events queued", "[core][engine]") {
  Engine engine;
  int runs = 0;
  engine.schedule_at(Time::from_us(1), [&] { ++runs; });
  engine.schedule_at(Time::from_us(3), [&] { ++runs; });
  CHECK(engine.run_until(Time::from_us(2)) == 1);
  CHECK_FALSE(engine.empty());
  CHECK(engine.run() == 1);
  CHECK(runs == 2);
}

TEST_CASE("two engines fed the same schedule execute the same sequence", "[core][engine]") {
  auto trace = [] {
    Engine engine;
    std::vector<std::int64_t> stamps;
    for (int i = 0; i < 100; ++i) {
      engine.schedule_at(Time::from_ns((i * 37) % 11),
                         [&, i] { stamps.push_back(engine.now().ps() * 1000 + i); });
    }
    engine.run();
    return stamps;
  };
  CHECK(trace() == trace());
}

TEST_CASE("scheduling in the past is rejected", "[core][engine]") {
  Engine engine;
  engine.schedule_at(Time::from_us(2), [] {});
  engine.run();
  CHECK_THROWS_AS(engine.schedule_at(Time::from_us(1), [] {}), std::logic_error);
}
