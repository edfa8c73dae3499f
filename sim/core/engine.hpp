// The discrete-event engine.
//
// Events are ordered by (time, lateness, sequence number): two events at the same time run in
// the order they were scheduled, so the same input always gives the same event order. A *late*
// event (schedule_late) runs after every ordinary event of its time, including ordinary events
// that other events of that time schedule for it: models that gather the changes of one instant
// and settle them once (the flow network's rate solve) use it. An event
// may be cancelled through the id `schedule_at` returned; cancelled events are skipped
// lazily when they reach the front of the queue. Scheduling in the past is a logic error.
//
// Cost: events wait in *runs*: a run holds events of one time and one lateness in scheduling
// order, and a push whose (time, lateness) equals that of the run created last appends to it
// in O(1). Only runs enter the heap (4-ary, 16-byte keys: the time, then lateness, the first
// event's sequence number and the run's index packed in one word). Ranks that stay in lock-step
// schedule one time after another (89% of the pushes of a 1,024-rank replay repeat the time of
// the previous push), so most events cost an append and a read, not a sift. The order is still
// exactly (time, lateness, sequence number): a run only grows while it is the newest run, so
// every event of an older run of the same time and lateness was scheduled before the first
// event of a newer one. Callbacks wait in a slot table reused through a free list, so nothing
// moves a std::function. At most 2^24 events wait at once and 2^39 are scheduled over an
// engine's life; beyond either, scheduling throws std::length_error. Which events have run or
// been cancelled is one bit per event id (ids are sequence numbers), not a hash set.
// (Profiled on a 1,024-rank replay: the hash sets were 5% of the run, the heap of whole events
// 20%, a heap of every event's key 17%.)
//
// Invariants, checked on every event (a compare each): time never goes backwards — an event
// popped earlier than now() throws std::logic_error, since it means the queue is corrupt — and
// at most `event_budget()` events run (0: no limit); the event after the last one allowed throws
// EventBudgetExceeded and stays queued, so a runaway simulation stops instead of spinning.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/core/time.hpp"

namespace wallsim {

using EventId = std::uint64_t;

// Thrown by run() / run_until() when the next event would exceed the event budget.
class EventBudgetExceeded : public std::runtime_error {
 public:
  EventBudgetExceeded(std::uint64_t budget, Time at);
  // The same with a caller's message (one that names the setting the budget came from).
  EventBudgetExceeded(std::uint64_t budget, Time at, const std::string& message);
  std::uint64_t budget() const { return budget_; }
  Time at() const { return at_; }  // the time of the event that was refused

 private:
  std::uint64_t budget_;
  Time at_;
};

class Engine {
 public:
  using Callback = std::function<void()>;

  Time now() const { return now_; }

  // Schedules `callback` at absolute time `at` (>= now()); returns an id for cancel().
  EventId schedule_at(Time at, Callback callback);
  EventId schedule_after(Time delay, Callback callback) {
    return schedule_at(now_ + delay, std::move(callback));
  }
  // Schedules `callback` at `at` (>= now()) after every ordinary event of that time; late
  // events of one time run in the order they were scheduled.
  EventId schedule_late(Time at, Callback callback);

  // Cancels a pending event; returns false when it already ran or was cancelled.
  bool cancel(EventId id);

  // Runs events until the queue is empty. Returns the number of events executed.
  std::uint64_t run();

  // Runs events with time <= `limit`; later events stay queued.
  std::uint64_t run_until(Time limit);

  bool empty() const { return waiting_ == cancelled_in_queue_; }
  std::uint64_t events_executed() const { return executed_; }

  // At most `max_events` events run over the engine's life (0: no limit, the default).
  void set_event_budget(std::uint64_t max_events) { budget_ = max_events; }
  std::uint64_t event_budget() const { return budget_; }

 private:
  // An event: (late, sequence number, callback slot) packed so that comparing the packed word
  // orders late events after ordinary ones and then by sequence number.
  static constexpr int kSlotBits = 24;
  static constexpr std::uint64_t kMaxSlot = (std::uint64_t{1} << kSlotBits) - 1;
  static constexpr std::uint64_t kMaxSeq = (std::uint64_t{1} << (63 - kSlotBits)) - 1;
  static EventId seq_of(std::uint64_t event) { return (event >> kSlotBits) & kMaxSeq; }
  static std::uint32_t slot_of(std::uint64_t event) {
    return static_cast<std::uint32_t>(event & kMaxSlot);
  }
  // Events of one time and lateness in scheduling order; `next` is the first not yet run.
  struct Run {
    Time at;
    bool late = false;
    std::size_t next = 0;
    std::vector<std::uint64_t> events;
  };
  // A heap key: the run's time, then its first event's packed word with the run's index in
  // place of the slot.
  struct Key {
    Time at;
    std::uint64_t order;
    std::uint32_t run() const { return static_cast<std::uint32_t>(order & kMaxSlot); }
  };
  // Without branches: with many ranks in lock-step, equal times are common and a branch on
  // them mispredicts.
  static bool earlier(const Key& a, const Key& b) {
    const std::int64_t x = a.at.ps();
    const std::int64_t y = b.at.ps();
    return (x < y) | ((x == y) & (a.order < b.order));
  }
  static constexpr std::uint32_t kNoRun = ~std::uint32_t{0};
  EventId push(Time at, bool late, Callback callback);
  bool step(Time limit);
  void push_key(const Key& key);
  void pop_front();
  void retire_front_run();

  Time now_ = Time::zero();
  EventId next_seq_ = 0;
  std::uint64_t executed_ = 0;
  std::uint64_t budget_ = 0;
  std::vector<Key> heap_;  // 4-ary min-heap of runs by (at, order)
  std::vector<Run> runs_;
  std::vector<std::uint32_t> free_runs_;
  std::uint32_t newest_run_ = kNoRun;  // the run created last, while it waits in the heap
  std::size_t waiting_ = 0;            // events queued, cancelled ones included
  std::vector<Callback> callbacks_;
  std::vector<std::uint32_t> free_slots_;
  std::vector<bool> finished_;   // by id: ran or was cancelled
  std::vector<bool> cancelled_;  // by id: cancelled while queued
  std::size_t cancelled_in_queue_ = 0;
};

}  // namespace wallsim
