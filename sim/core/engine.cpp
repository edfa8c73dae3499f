#include "sim/core/engine.hpp"

#include <stdexcept>

namespace wallsim {

EventId Engine::schedule_at(Time at, Callback callback) {
  if (at < now_) throw std::logic_error("Engine: event scheduled in the past");
  const EventId id = next_seq_++;
  queue_.push(Event{at, id, std::move(callback)});
  pending_.insert(id);
  return id;
}

bool Engine::cancel(EventId id) {
  if (pending_.erase(id) == 0) return false;
  cancelled_.insert(id);
  return true;
}

bool Engine::step(Time limit) {
  while (!queue_.empty()) {
    const Event& top = queue_.top();
    if (cancelled_.erase(top.seq) > 0) {
      queue_.pop();
      continue;
    }
    if (top.at > limit) return false;
    // Move the callback out before popping: it may schedule new events.
    Event event{top.at, top.seq, std::move(const_cast<Event&>(top).callback)};
    queue_.pop();
    pending_.erase(event.seq);
    now_ = event.at;
    ++executed_;
    event.callback();
    return true;
  }
  return false;
}

std::uint64_t Engine::run() { return run_until(Time::max()); }

std::uint64_t Engine::run_until(Time limit) {
  std::uint64_t count = 0;
  while (step(limit)) ++count;
  return count;
}

}  // namespace wallsim
