// A CommService for tests: every collective takes `collective_time`, every transfer
// `transfer_time`, timed on the engine; each call is recorded with the time it came in.
#pragma once

#include <vector>

#include "sim/core/engine.hpp"
#include "sim/graph/replay.hpp"

namespace wallsim::test {

class FixedDelayComm : public CommService {
 public:
  struct Call {
    bool collective = true;
    GroupIndex group = 0;  // collectives
    RankIndex src = 0;     // transfers
    RankIndex dst = 0;
    std::uint32_t payload = 0;
    Time at;
  };

  FixedDelayComm(Engine& engine, Time collective_time, Time transfer_time)
      : engine_(engine), collective_time_(collective_time), transfer_time_(transfer_time) {}

  void start_collective(GroupIndex group, std::uint32_t payload, Done done) override {
    calls.push_back({true, group, 0, 0, payload, engine_.now()});
    engine_.schedule_after(collective_time_, std::move(done));
  }
  void start_transfer(RankIndex src, RankIndex dst, std::uint32_t payload, Done done) override {
    calls.push_back({false, 0, src, dst, payload, engine_.now()});
    engine_.schedule_after(transfer_time_, std::move(done));
  }

  std::vector<Call> calls;

 private:
  Engine& engine_;
  Time collective_time_;
  Time transfer_time_;
};

// Small builders so that tests read as the scenario they describe.
inline Op compute(Time duration, StreamIndex stream = 0, Time contended = Time::zero()) {
  Op op;
  op.kind = OpKind::kCompute;
  op.stream = stream;
  op.duration = duration;
  op.duration_contended = contended;
  return op;
}

inline Op collective(GroupIndex group, StreamIndex stream = 1, std::uint32_t payload = 0) {
  Op op;
  op.kind = OpKind::kCollective;
  op.stream = stream;
  op.group = group;
  op.payload = payload;
  return op;
}

inline Op send(RankIndex peer, StreamIndex stream = 1, std::uint32_t payload = 0) {
  Op op;
  op.kind = OpKind::kSend;
  op.stream = stream;
  op.peer = peer;
  op.payload = payload;
  return op;
}

// A receive names the payload it expects: the sender's, or the replay reports a mismatch.
inline Op recv(RankIndex peer, StreamIndex stream = 1, std::uint32_t payload = 0) {
  Op op;
  op.kind = OpKind::kRecv;
  op.stream = stream;
  op.peer = peer;
  op.payload = payload;
  return op;
}

inline Time us(double value) {
  return Time::from_us(value);
}

}  // namespace wallsim::test
