// Collective operations as NCCL runs them: which op, over which global ranks, how many bytes.
//
// Sizes follow nccl-tests (hardware.md §3.1): `bytes` is S, the whole buffer — for all-gather
// the gathered output, for reduce-scatter the full input, for all-to-all each rank's whole send
// buffer, for all-reduce and send/recv the buffer itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wallsim {

enum class CollectiveOp : std::uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSendRecv
};
enum class Algorithm : std::uint8_t { kRing, kTree, kNvls, kPairwise, kP2p };
enum class Protocol : std::uint8_t { kLL, kLL128, kSimple };
inline constexpr int kProtocolCount = 3;

const char* op_name(CollectiveOp op);
const char* algorithm_name(Algorithm algorithm);
const char* protocol_name(Protocol protocol);

// Parsers for names as users type them (CLI, configs); nullopt when unknown.
std::optional<CollectiveOp> parse_op(std::string_view name);
std::optional<Algorithm> parse_algorithm(std::string_view name);
std::optional<Protocol> parse_protocol(std::string_view name);
std::string op_names();         // "all_reduce, all_gather, ..." for error messages
std::string algorithm_names();  // likewise
std::string protocol_names();

// nccl-tests' bus-bandwidth factor: busbw = algbw * factor (hardware.md §3.1):
// all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; send/recv 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

struct CollectiveRequest {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<int> ranks;              // global GPU ids, at least 2, distinct
  double bytes = 0;                    // S, see above
  std::optional<Algorithm> algorithm;  // forced, as NCCL_ALGO does
  std::optional<Protocol> protocol;    // forced, as NCCL_PROTO does
};

}  // namespace wallsim
