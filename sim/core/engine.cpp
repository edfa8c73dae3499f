#include "sim/core/engine.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace wallsim {
namespace {

std::string budget_message(std::uint64_t budget, Time at) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.6g", at.seconds());
  return "the event budget of " + std::to_string(budget) + " events ran out at simulated time " +
         seconds + " s with events still queued";
}

}  // namespace

EventBudgetExceeded::EventBudgetExceeded(std::uint64_t budget, Time at)
    : std::runtime_error(budget_message(budget, at)), budget_(budget), at_(at) {}

EventBudgetExceeded::EventBudgetExceeded(std::uint64_t budget, Time at, const std::string& message)
    : std::runtime_error(message), budget_(budget), at_(at) {}

EventId Engine::schedule_at(Time at, Callback callback) {
  return push(at, false, std::move(callback));
}

EventId Engine::schedule_late(Time at, Callback callback) {
  return push(at, true, std::move(callback));
}

EventId Engine::push(Time at, bool late, Callback callback) {
  if (at < now_) throw std::logic_error("Engine: event scheduled in the past");
  if (next_seq_ > kMaxSeq) throw std::length_error("Engine: more than 2^39 events scheduled");
  const EventId id = next_seq_++;
  std::uint32_t slot;
  if (free_slots_.empty()) {
    if (callbacks_.size() > kMaxSlot) {
      throw std::length_error("Engine: more than 2^24 events waiting at once");
    }
    slot = static_cast<std::uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(callback));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(callback);
  }
  finished_.push_back(false);
  cancelled_.push_back(false);
  ++waiting_;
  const std::uint64_t event = (std::uint64_t{late} << 63) | (id << kSlotBits) | slot;
  if (newest_run_ != kNoRun) {
    Run& newest = runs_[newest_run_];
    if (newest.at == at && newest.late == late) {
      newest.events.push_back(event);
      return id;
    }
  }
  // A new run: at most one per waiting event, so its index fits the slot bits.
  std::uint32_t index;
  if (free_runs_.empty()) {
    index = static_cast<std::uint32_t>(runs_.size());
    runs_.emplace_back();
  } else {
    index = free_runs_.back();
    free_runs_.pop_back();
  }
  Run& run = runs_[index];
  run.at = at;
  run.late = late;
  run.next = 0;
  run.events.push_back(event);
  newest_run_ = index;
  push_key(Key{at, (event & ~kMaxSlot) | index});
  return id;
}

void Engine::push_key(const Key& key) {
  std::size_t hole = heap_.size();
  heap_.push_back(key);
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 4;
    if (!earlier(key, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = key;
}

bool Engine::cancel(EventId id) {
  if (id >= next_seq_ || finished_[id]) return false;
  finished_[id] = true;
  cancelled_[id] = true;
  ++cancelled_in_queue_;
  return true;
}

// Removes the front key: the last key sifts down from the root.
void Engine::pop_front() {
  const Key last = heap_.back();
  heap_.pop_back();
  const std::size_t n = heap_.size();
  if (n == 0) return;
  std::size_t hole = 0;
  for (;;) {
    const std::size_t first = 4 * hole + 1;
    if (first >= n) break;
    std::size_t child = first;
    const std::size_t end = std::min(first + 4, n);
    for (std::size_t c = first + 1; c < end; ++c) {
      if (earlier(heap_[c], heap_[child])) child = c;
    }
    if (!earlier(heap_[child], last)) break;
    heap_[hole] = heap_[child];
    hole = child;
  }
  heap_[hole] = last;
}

// The front run has no events left: out of the heap, its storage kept for the next run.
void Engine::retire_front_run() {
  const std::uint32_t index = heap_.front().run();
  pop_front();
  runs_[index].events.clear();
  free_runs_.push_back(index);
  if (newest_run_ == index) newest_run_ = kNoRun;
}

bool Engine::step(Time limit) {
  while (!heap_.empty()) {
    Run& run = runs_[heap_.front().run()];
    const std::uint64_t event = run.events[run.next];
    const EventId seq = seq_of(event);
    const std::uint32_t slot = slot_of(event);
    if (cancelled_[seq]) {
      if (++run.next == run.events.size()) retire_front_run();
      callbacks_[slot] = nullptr;
      free_slots_.push_back(slot);
      --waiting_;
      --cancelled_in_queue_;
      continue;
    }
    if (run.at > limit) return false;
    if (run.at < now_) {
      throw std::logic_error(
          "Engine: event " + std::to_string(seq) + " at " + std::to_string(run.at.ps()) +
          " ps runs after now = " + std::to_string(now_.ps()) + " ps: time went backwards");
    }
    if (budget_ != 0 && executed_ >= budget_) throw EventBudgetExceeded(budget_, run.at);
    // Move the callback out before running it: it may schedule new events into this slot
    // (and into this run, which may be retired and reused first).
    const Time at = run.at;
    Callback callback = std::move(callbacks_[slot]);
    callbacks_[slot] = nullptr;
    if (++run.next == run.events.size()) retire_front_run();
    free_slots_.push_back(slot);
    finished_[seq] = true;
    --waiting_;
    now_ = at;
    ++executed_;
    callback();
    return true;
  }
  return false;
}

std::uint64_t Engine::run() {
  return run_until(Time::max());
}

std::uint64_t Engine::run_until(Time limit) {
  std::uint64_t count = 0;
  while (step(limit)) ++count;
  return count;
}

}  // namespace wallsim
