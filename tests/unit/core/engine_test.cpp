#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
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

TEST_CASE(
    "time never goes backwards under a random mix of schedules, nested schedules and "
    "cancellations",
    "[core][engine][invariant]") {
  // Events at random times (many ties), a third of them scheduling a follow-up at a random
  // delay (often zero), a tenth cancelled. Every executed event must see now() at or after the
  // previous one, and equal-time events must run in scheduling order (ids increase).
  Engine engine;
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> at_ns(0, 50);
  std::vector<std::pair<std::int64_t, wallsim::EventId>> seen;  // (time, id) per executed event
  std::vector<wallsim::EventId> ids;
  std::function<void(wallsim::EventId*)> body;
  auto schedule = [&](Time at) {
    auto id = std::make_shared<wallsim::EventId>();
    *id = engine.schedule_at(at, [&, id] { body(id.get()); });
    ids.push_back(*id);
  };
  body = [&](wallsim::EventId* id) {
    seen.emplace_back(engine.now().ps(), *id);
    if (seen.size() % 3 == 0 && seen.size() < 3000) {
      schedule(engine.now() + Time::from_ns(at_ns(rng) % 4));
    }
  };
  for (int i = 0; i < 1000; ++i) schedule(Time::from_ns(at_ns(rng)));
  int cancelled = 0;
  for (std::size_t i = 0; i < ids.size(); i += 10) cancelled += engine.cancel(ids[i]) ? 1 : 0;
  const std::uint64_t executed = engine.run();
  CHECK(executed == seen.size());
  CHECK(executed + static_cast<std::uint64_t>(cancelled) == ids.size());
  REQUIRE(seen.size() > 1000);
  for (std::size_t i = 1; i < seen.size(); ++i) {
    CAPTURE(i);
    REQUIRE(seen[i].first >= seen[i - 1].first);
    if (seen[i].first == seen[i - 1].first) REQUIRE(seen[i].second > seen[i - 1].second);
  }
}

TEST_CASE("an event budget stops the run at the first event beyond it and leaves it queued",
          "[core][engine][budget]") {
  Engine engine;
  engine.set_event_budget(3);
  int runs = 0;
  for (int i = 1; i <= 5; ++i) engine.schedule_at(Time::from_us(i), [&] { ++runs; });
  try {
    engine.run();
    FAIL("the budget did not stop the run");
  } catch (const wallsim::EventBudgetExceeded& e) {
    CHECK(e.budget() == 3);
    CHECK(e.at() == Time::from_us(4));  // the fourth event is the one refused
    CHECK_THAT(e.what(), Catch::Contains("event budget of 3 events ran out"));
  }
  CHECK(runs == 3);
  CHECK(engine.events_executed() == 3);
  CHECK_FALSE(engine.empty());
  // Raising the budget lets the rest run.
  engine.set_event_budget(0);
  CHECK(engine.run() == 2);
  CHECK(runs == 5);
}

TEST_CASE("a budget equal to the events needed is not exceeded", "[core][engine][budget]") {
  Engine engine;
  engine.set_event_budget(2);
  engine.schedule_at(Time::from_us(1), [] {});
  engine.schedule_at(Time::from_us(2), [] {});
  CHECK(engine.run() == 2);
}

TEST_CASE("a late event runs after every ordinary event of its time, even ones scheduled then",
          "[core][engine]") {
  Engine engine;
  std::vector<std::string> order;
  engine.schedule_late(Time::from_us(1), [&] { order.push_back("late"); });
  engine.schedule_at(Time::from_us(1), [&] {
    order.push_back("a");
    // Scheduled during the instant, after the late event was: still runs before it.
    engine.schedule_at(engine.now(), [&] { order.push_back("b"); });
  });
  engine.schedule_at(Time::from_us(2), [&] { order.push_back("next"); });
  engine.run();
  CHECK(order == std::vector<std::string>{"a", "b", "late", "next"});
}

TEST_CASE("late events of one time run in scheduling order and may schedule ordinary ones",
          "[core][engine]") {
  Engine engine;
  std::vector<std::string> order;
  engine.schedule_late(Time::from_us(1), [&] {
    order.push_back("late1");
    engine.schedule_at(engine.now(), [&] { order.push_back("ordinary"); });
  });
  engine.schedule_late(Time::from_us(1), [&] { order.push_back("late2"); });
  engine.run();
  // The ordinary event scheduled by late1 sorts before late2 (same time, not late).
  CHECK(order == std::vector<std::string>{"late1", "ordinary", "late2"});
}
