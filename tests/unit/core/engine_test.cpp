#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
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

namespace {

// The order the engine promises, kept the plain way: every waiting event in one ordered set
// keyed by (time, lateness, id); a cancelled event is erased.
class ReferenceQueue {
 public:
  std::uint64_t schedule(std::int64_t at_ps, bool late) {
    const std::uint64_t id = next_id_++;
    waiting_.insert({at_ps, late, id});
    return id;
  }
  void cancel(std::uint64_t id) {
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (std::get<2>(*it) == id) {
        waiting_.erase(it);
        return;
      }
    }
  }
  bool empty() const { return waiting_.empty(); }
  std::tuple<std::int64_t, bool, std::uint64_t> pop() {
    const auto front = *waiting_.begin();
    waiting_.erase(waiting_.begin());
    return front;
  }

 private:
  std::uint64_t next_id_ = 0;
  std::set<std::tuple<std::int64_t, bool, std::uint64_t>> waiting_;
};

// What event `id` does when it runs, drawn from the id alone so that both queues see the same
// program: up to three follow-ups at small delays (a third of them at the same instant, so
// runs of equal times and a mix of ordinary and late events form), sometimes a cancellation of
// an earlier event that may still wait.
struct Action {
  std::vector<std::pair<std::int64_t, bool>> follow_ups;  // (delay ps, late)
  std::uint64_t cancel = 0;
  bool cancels = false;
};

Action action_of(std::uint64_t id) {
  std::mt19937_64 rng(id * 7919 + 17);
  Action a;
  const int n = static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) {
    const std::int64_t delays[] = {0, 0, 1000, 1000, 1000, 2000, 7000};
    a.follow_ups.emplace_back(delays[rng() % 7], rng() % 5 == 0);
  }
  if (id > 10 && rng() % 6 == 0) {
    a.cancels = true;
    a.cancel = id - 1 - rng() % 10;
  }
  return a;
}

}  // namespace

TEST_CASE(
    "runs of equal times keep the exact (time, lateness, scheduling) order of a plain "
    "ordered queue",
    "[core][engine][invariant]") {
  // 200 seeds of a random program (follow-ups at equal and later times, late events, ordinary
  // events scheduled during late ones, cancellations of waiting and of finished events,
  // run_until in slices): the engine must execute exactly the events the ordered set pops,
  // in its order.
  for (std::uint64_t seed = 0; seed < 200; ++seed) {
    CAPTURE(seed);
    constexpr std::uint64_t kCap = 3000;  // stop scheduling follow-ups beyond this many events
    // The reference.
    std::vector<std::uint64_t> expected;
    {
      ReferenceQueue queue;
      std::vector<bool> done;
      std::mt19937_64 rng(seed);
      for (int i = 0; i < 40; ++i) {
        const std::int64_t at = static_cast<std::int64_t>(rng() % 5) * 1000;
        const bool late = rng() % 4 == 0;
        queue.schedule(at, late);
        done.push_back(false);
      }
      while (!queue.empty()) {
        const auto [at, late, id] = queue.pop();
        expected.push_back(id);
        done[id] = true;
        const Action a = action_of(id);
        if (done.size() < kCap) {
          for (const auto& [delay, follow_late] : a.follow_ups) {
            queue.schedule(at + delay, follow_late);
            done.push_back(false);
          }
        }
        if (a.cancels && !done[a.cancel]) {
          queue.cancel(a.cancel);
          done[a.cancel] = true;
        }
      }
    }
    // The engine, run in slices of 3 µs.
    std::vector<std::uint64_t> executed;
    Engine engine;
    std::uint64_t scheduled = 0;
    std::function<void(std::uint64_t)> body = [&](std::uint64_t id) {
      executed.push_back(id);
      const Action a = action_of(id);
      if (scheduled < kCap) {
        for (const auto& [delay, follow_late] : a.follow_ups) {
          const std::uint64_t next = scheduled++;
          const Time at = engine.now() + Time::from_ps(delay);
          const auto run = [&body, next] { body(next); };
          const wallsim::EventId got =
              follow_late ? engine.schedule_late(at, run) : engine.schedule_at(at, run);
          REQUIRE(got == next);
        }
      }
      if (a.cancels) engine.cancel(a.cancel);
    };
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 40; ++i) {
      const Time at = Time::from_ps(static_cast<std::int64_t>(rng() % 5) * 1000);
      const bool late = rng() % 4 == 0;
      const std::uint64_t next = scheduled++;
      const auto run = [&body, next] { body(next); };
      late ? engine.schedule_late(at, run) : engine.schedule_at(at, run);
    }
    for (Time limit = Time::from_us(3); !engine.empty(); limit = limit + Time::from_us(3)) {
      engine.run_until(limit);
      REQUIRE(engine.now() <= limit);
    }
    REQUIRE(expected.size() > 40);
    CHECK(executed == expected);
  }
}
