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
  // Sift up.
  const Key key{at, (std::uint64_t{late} << 63) | (id << kSlotBits) | slot};
  std::size_t hole = heap_.size();
  heap_.push_back(key);
  while (hole > 0) {
    const std::size_t parent = (hole - 1) / 4;
    if (!earlier(key, heap_[parent])) break;
    heap_[hole] = heap_[parent];
    hole = parent;
  }
  heap_[hole] = key;
  return id;
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

bool Engine::step(Time limit) {
  while (!heap_.empty()) {
    const Key top = heap_.front();
    if (cancelled_[top.seq()]) {
      pop_front();
      callbacks_[top.slot()] = nullptr;
      free_slots_.push_back(top.slot());
      --cancelled_in_queue_;
      continue;
    }
    if (top.at > limit) return false;
    if (top.at < now_) {
      throw std::logic_error(
          "Engine: event " + std::to_string(top.seq()) + " at " + std::to_string(top.at.ps()) +
          " ps runs after now = " + std::to_string(now_.ps()) + " ps: time went backwards");
    }
    if (budget_ != 0 && executed_ >= budget_) throw EventBudgetExceeded(budget_, top.at);
    // Move the callback out before running it: it may schedule new events into this slot.
    Callback callback = std::move(callbacks_[top.slot()]);
    callbacks_[top.slot()] = nullptr;
    pop_front();
    free_slots_.push_back(top.slot());
    finished_[top.seq()] = true;
    now_ = top.at;
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
