#include "sim/network/collective/collective.hpp"

#include <array>
#include <utility>

namespace wallsim {
namespace {

constexpr std::array<std::pair<const char*, CollectiveOp>, 5> kOps{{
    {"all_reduce", CollectiveOp::kAllReduce},
    {"all_gather", CollectiveOp::kAllGather},
    {"reduce_scatter", CollectiveOp::kReduceScatter},
    {"all_to_all", CollectiveOp::kAllToAll},
    {"send_recv", CollectiveOp::kSendRecv},
}};
constexpr std::array<std::pair<const char*, Algorithm>, 5> kAlgorithms{{
    {"ring", Algorithm::kRing},
    {"tree", Algorithm::kTree},
    {"nvls", Algorithm::kNvls},
    {"pairwise", Algorithm::kPairwise},
    {"p2p", Algorithm::kP2p},
}};
constexpr std::array<std::pair<const char*, Protocol>, 3> kProtocols{{
    {"ll", Protocol::kLL},
    {"ll128", Protocol::kLL128},
    {"simple", Protocol::kSimple},
}};

template <typename Table, typename Value>
const char* name_of(const Table& table, Value value) {
  for (const auto& [name, entry] : table) {
    if (entry == value) return name;
  }
  return "?";
}

template <typename Table>
auto parse_name(const Table& table, std::string_view text)
    -> std::optional<typename Table::value_type::second_type> {
  for (const auto& [name, entry] : table) {
    if (text == name) return entry;
  }
  return std::nullopt;
}

template <typename Table>
std::string list_names(const Table& table) {
  std::string out;
  for (const auto& entry : table) out += (out.empty() ? "" : ", ") + std::string(entry.first);
  return out;
}

}  // namespace

const char* op_name(CollectiveOp op) {
  return name_of(kOps, op);
}
const char* algorithm_name(Algorithm algorithm) {
  return name_of(kAlgorithms, algorithm);
}
const char* protocol_name(Protocol protocol) {
  return name_of(kProtocols, protocol);
}

std::optional<CollectiveOp> parse_op(std::string_view name) {
  return parse_name(kOps, name);
}
std::optional<Algorithm> parse_algorithm(std::string_view name) {
  return parse_name(kAlgorithms, name);
}
std::optional<Protocol> parse_protocol(std::string_view name) {
  return parse_name(kProtocols, name);
}
std::string op_names() {
  return list_names(kOps);
}
std::string algorithm_names() {
  return list_names(kAlgorithms);
}
std::string protocol_names() {
  return list_names(kProtocols);
}

double bus_bandwidth_factor(CollectiveOp op, int ranks) {
  const double n = ranks;
  switch (op) {
    case CollectiveOp::kAllReduce:
      return 2.0 * (n - 1) / n;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllToAll:
      return (n - 1) / n;
    case CollectiveOp::kSendRecv:
      return 1.0;
  }
  return 1.0;
}

}  // namespace wallsim
