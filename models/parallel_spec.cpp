#include "models/parallel_spec.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "models/pipeline_layout.hpp"
#include "sim/core/json_reader.hpp"

namespace wallsim::models {
namespace {

constexpr std::array<Axis, 5> kAllAxes{Axis::tp, Axis::cp, Axis::ep, Axis::dp, Axis::pp};

std::optional<Axis> axis_from_name(const std::string& name) {
  for (Axis axis : kAllAxes) {
    if (name == to_string(axis)) return axis;
  }
  return std::nullopt;
}

void read_pipeline(JsonObject& object, ParallelSpec& spec) {
  spec.pp = object.integer_or("pp", 1, 1);
  const bool vpp_given = object.has("vpp");
  spec.vpp = object.integer_or("vpp", 1, 1);
  if (auto node = object.find("first_stage_layers")) spec.first_stage_layers = node->as_integer(0);
  if (auto node = object.find("last_stage_layers")) spec.last_stage_layers = node->as_integer(0);
  const auto node = object.find("pipeline_layout");
  if (!node) return;
  spec.pipeline_layout = node->as_string();
  if (spec.first_stage_layers || spec.last_stage_layers) {
    node->fail(
        "places every layer; first_stage_layers / last_stage_layers cannot be given with it");
  }
  try {
    spec.layout_stages = parse_pipeline_layout(*spec.pipeline_layout);
  } catch (const std::invalid_argument& e) {
    node->fail(e.what());
  }
  const std::size_t stages = spec.layout_stages.size();
  const auto pp = static_cast<std::size_t>(spec.pp);
  if (stages % pp != 0) {
    node->fail("has " + std::to_string(stages) +
               " stages, which must divide by pp = " + std::to_string(spec.pp));
  }
  const auto vpp = static_cast<std::int64_t>(stages / pp);
  if (vpp_given && spec.vpp != vpp) {
    node->fail("has " + std::to_string(stages) + " stages = pp · " + std::to_string(vpp) +
               ", but parallel.vpp is " + std::to_string(spec.vpp));
  }
  spec.vpp = vpp;
}

// One of the four spellings choice_or allowed.
CpCommType parse_cp_comm_type(const std::string& name) {
  if (name == "all_gather") return CpCommType::kAllGather;
  if (name == "a2a") return CpCommType::kA2a;
  if (name == "a2a+p2p") return CpCommType::kA2aP2p;
  return CpCommType::kP2p;
}

// Context parallelism: the exchange (mechanics.md §3.2) and, for a2a+p2p, the inner all-to-all
// and outer ring sizes (Megatron's --hierarchical-context-parallel-sizes).
void read_context(JsonObject& object, ParallelSpec& spec) {
  spec.cp = object.integer_or("cp", 1, 1);
  spec.cp_comm_type = parse_cp_comm_type(
      object.choice_or("cp_comm_type", "p2p", {"p2p", "all_gather", "a2a", "a2a+p2p"}));
  if (auto node = object.find("hierarchical_cp")) {
    if (spec.cp_comm_type != CpCommType::kA2aP2p) {
      node->fail("only used with cp_comm_type \"a2a+p2p\"");
    }
    const std::vector<JsonNode> sizes = node->as_array();
    if (sizes.size() != 2) node->fail("must be [a2a_size, p2p_size]");
    spec.hierarchical_cp = {sizes[0].as_integer(1), sizes[1].as_integer(1)};
  } else if (spec.cp_comm_type == CpCommType::kA2aP2p) {
    object.at("cp_comm_type")
        .fail("\"a2a+p2p\" needs parallel.hierarchical_cp = [a2a_size, p2p_size]");
  }
  spec.cp_load_balance = object.boolean_or("cp_load_balance", true);
}

// Expert parallelism (checked against the model in make_layout).
void read_expert(JsonObject& object, ParallelSpec& spec) {
  spec.ep = object.integer_or("ep", 1, 1);
  spec.etp = object.integer_or("etp", 1, 1);
  spec.moe_dispatcher = *parse_moe_dispatcher(
      object.choice_or("moe_dispatcher", "alltoall", {"alltoall", "allgather", "flex"}));
  if (auto node = object.find("moe_grouped_gemm")) spec.moe_grouped_gemm = node->as_bool();
  spec.ep_group_style =
      object.choice_or("ep_group_style", "megatron", {"megatron", "deepspeed"}) == "deepspeed"
          ? EpGroupStyle::kDeepSpeed
          : EpGroupStyle::kMegatron;
}

}  // namespace

const char* to_string(CpCommType type) {
  switch (type) {
    case CpCommType::kP2p:
      return "p2p";
    case CpCommType::kAllGather:
      return "all_gather";
    case CpCommType::kA2a:
      return "a2a";
    case CpCommType::kA2aP2p:
      return "a2a+p2p";
  }
  return "p2p";
}

const char* to_string(EpGroupStyle style) {
  return style == EpGroupStyle::kDeepSpeed ? "deepspeed" : "megatron";
}

const char* to_string(MoeDispatcher dispatcher) {
  switch (dispatcher) {
    case MoeDispatcher::kAllToAll:
      return "alltoall";
    case MoeDispatcher::kAllGather:
      return "allgather";
    case MoeDispatcher::kFlex:
      return "flex";
  }
  return "unknown";
}

std::optional<MoeDispatcher> parse_moe_dispatcher(std::string_view name) {
  for (auto dispatcher :
       {MoeDispatcher::kAllToAll, MoeDispatcher::kAllGather, MoeDispatcher::kFlex}) {
    if (name == to_string(dispatcher)) return dispatcher;
  }
  return std::nullopt;
}

const char* to_string(DataSharding sharding) {
  switch (sharding) {
    case DataSharding::kNone:
      return "none";
    case DataSharding::kOptimizer:
      return "optimizer";
    case DataSharding::kGrads:
      return "grads";
    case DataSharding::kParams:
      return "params";
  }
  return "none";
}

std::optional<DataSharding> parse_data_sharding(std::string_view name) {
  for (auto sharding : {DataSharding::kNone, DataSharding::kOptimizer, DataSharding::kGrads,
                        DataSharding::kParams}) {
    if (name == to_string(sharding)) return sharding;
  }
  return std::nullopt;
}

const char* to_string(Axis axis) {
  switch (axis) {
    case Axis::tp:
      return "tp";
    case Axis::cp:
      return "cp";
    case Axis::ep:
      return "ep";
    case Axis::dp:
      return "dp";
    case Axis::pp:
      return "pp";
  }
  return "?";
}

AxisOrder parse_axis_order(const JsonNode& node) {
  const std::string text = node.as_string();
  AxisOrder order{};
  std::size_t count = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto dash = std::min(text.find('-', start), text.size());
    auto axis = axis_from_name(text.substr(start, dash - start));
    const bool repeated = axis && std::find(order.begin(), order.begin() + static_cast<long>(count),
                                            *axis) != order.begin() + static_cast<long>(count);
    if (!axis || repeated || count == order.size()) {
      node.fail("must name tp, cp, ep, dp and pp once each, joined by '-' (e.g. tp-cp-ep-dp-pp)");
    }
    order[count++] = *axis;
    start = dash + 1;
  }
  if (count != order.size()) {
    node.fail("must name tp, cp, ep, dp and pp once each, joined by '-' (e.g. tp-cp-ep-dp-pp)");
  }
  return order;
}

ParallelSpec parse_parallel_spec(const JsonNode& node) {
  JsonObject object(node);
  ParallelSpec spec;
  spec.tp = object.integer_or("tp", 1, 1);
  spec.sequence_parallel = object.boolean_or("sequence_parallel", false);
  read_context(object, spec);
  read_expert(object, spec);
  read_pipeline(object, spec);
  if (auto order = object.find("order")) spec.order = parse_axis_order(*order);
  if (auto dp = object.find("dp")) spec.dp = dp->as_integer(1);
  if (object.has("data_sharding")) {
    spec.data_sharding = parse_data_sharding(
        object.choice_or("data_sharding", "optimizer", {"none", "optimizer", "grads", "params"}));
  }
  if (auto group = object.find("fsdp_shard_group")) spec.fsdp_shard_group = group->as_integer(2);
  object.finish();
  return spec;
}

}  // namespace wallsim::models
