// The discrete-event engine.
//
// Events are ordered by (time, sequence number): two events at the same time run in the
// order they were scheduled, so the same input always gives the same event order. An event
// may be cancelled through the id `schedule_at` returned; cancelled events are skipped
// lazily when they reach the front of the queue. Scheduling in the past is a logic error.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_set>
#include <vector>

#include "sim/core/time.hpp"

namespace wallsim {

using EventId = std::uint64_t;

class Engine {
 public:
  using Callback = std::function<void()>;

  Time now() const { return now_; }

  // Schedules `callback` at absolute time `at` (>= now()); returns an id for cancel().
  EventId schedule_at(Time at, Callback callback);
  EventId schedule_after(Time delay, Callback callback) {
    return schedule_at(now_ + delay, std::move(callback));
  }

  // Cancels a pending event; returns false when it already ran or was cancelled.
  bool cancel(EventId id);

  // Runs events until the queue is empty. Returns the number of events executed.
  std::uint64_t run();

  // Runs events with time <= `limit`; later events stay queued.
  std::uint64_t run_until(Time limit);

  bool empty() const { return queue_.size() == cancelled_.size(); }
  std::uint64_t events_executed() const { return executed_; }

 private:
  struct Event {
    Time at;
    EventId seq;
    Callback callback;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.at != b.at ? a.at > b.at : a.seq > b.seq;
    }
  };
  bool step(Time limit);

  Time now_ = Time::zero();
  EventId next_seq_ = 0;
  std::uint64_t executed_ = 0;
  std::priority_queue<Event, std::vector<Event>, Later> queue_;
  std::unordered_set<EventId> cancelled_;
  std::unordered_set<EventId> pending_;
};

}  // namespace wallsim
