#include "models/sweep/sweep_row.hpp"

#include <algorithm>

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

Recompute recompute_from(const std::string& name, const std::string& where) {
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    if (name == to_string(r)) return r;
  }
  throw InputError(where, "recompute", name, "must be one of: none, selective, full");
}

MoeDispatcher dispatcher_from(const std::string& name, const std::string& where) {
  if (const auto dispatcher = parse_moe_dispatcher(name)) return *dispatcher;
  throw InputError(where, "dispatcher", name, "must be one of: alltoall, allgather, flex");
}

}  // namespace

const char* to_string(SweepObjective objective) {
  switch (objective) {
    case SweepObjective::p50:
      return "p50";
    case SweepObjective::p90:
      return "p90";
    case SweepObjective::mean:
      return "mean";
    case SweepObjective::step:
      break;
  }
  return "step";
}

std::optional<SweepObjective> parse_sweep_objective(const std::string& name) {
  for (SweepObjective o :
       {SweepObjective::step, SweepObjective::p50, SweepObjective::p90, SweepObjective::mean}) {
    if (name == to_string(o)) return o;
  }
  return std::nullopt;
}

double objective_s(const SweepRow& row, SweepObjective objective) {
  if (!row.distribution) return row.step_time_s;
  switch (objective) {
    case SweepObjective::p50:
      return row.distribution->p50;
    case SweepObjective::p90:
      return row.distribution->p90;
    case SweepObjective::mean:
      return row.distribution->mean;
    case SweepObjective::step:
      break;
  }
  return row.step_time_s;
}

void sort_rows(std::vector<SweepRow>& rows, SweepObjective objective) {
  std::sort(rows.begin(), rows.end(), [objective](const SweepRow& a, const SweepRow& b) {
    if (a.failed() != b.failed()) return b.failed();
    const double ta = objective_s(a, objective), tb = objective_s(b, objective);
    if (ta != tb) return ta < tb;
    return a.id < b.id;
  });
}

nlohmann::json row_to_json(const SweepRow& r) {
  const SweepPoint& p = r.point;
  nlohmann::json row = {{"index", r.index},
                        {"id", r.id},
                        {"tp", p.tp},
                        {"sequence_parallel", p.sequence_parallel && p.tp > 1},
                        {"cp", p.cp},
                        {"pp", p.pp},
                        {"vpp", p.vpp},
                        {"schedule", effective_schedule(p)},
                        {"ep", p.ep},
                        {"etp", p.etp},
                        {"dispatcher", to_string(p.dispatcher)},
                        {"dp", r.dp},
                        {"micro_batch", p.micro_batch},
                        {"num_microbatches", r.num_microbatches},
                        {"recompute", to_string(p.recompute)},
                        {"distributed_optimizer", p.distributed_optimizer},
                        {"data_sharding", to_string(effective_sharding(p))},
                        {"data_sharding_stated", p.sharding.has_value()},
                        {"overlap", p.overlap},
                        {"step_time_s", r.step_time_s},
                        {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                        {"mfu", r.mfu},
                        {"peak_bytes", r.peak_bytes},
                        {"hbm_bytes", r.hbm_bytes},
                        {"fits_in_memory", r.fits},
                        {"binding", r.binding},
                        {"error", r.error},
                        {"config", "configs/" + r.id + ".json"},
                        {"megatron_args", r.megatron_args},
                        {"extrapolated", r.extrapolated}};
  if (p.offload) row["offload"] = to_string(*p.offload);
  if (p.cuda_graphs) row["graphs"] = to_string(*p.cuda_graphs);
  if (p.placement) row["placement"] = *p.placement;
  if (r.distribution) {
    row["p10_s"] = r.distribution->p10;
    row["p50_s"] = r.distribution->p50;
    row["p90_s"] = r.distribution->p90;
    row["mean_s"] = r.distribution->mean;
  }
  return row;
}

SweepRow row_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    SweepRow r;
    r.index = j.at("index").get<std::int64_t>();
    r.id = j.at("id").get<std::string>();
    r.point.tp = j.at("tp").get<std::int64_t>();
    r.point.sequence_parallel = j.at("sequence_parallel").get<bool>() || r.point.tp == 1;
    r.point.cp = j.at("cp").get<std::int64_t>();
    r.point.pp = j.at("pp").get<std::int64_t>();
    r.point.vpp = j.at("vpp").get<std::int64_t>();
    // Megatron's choice is stored as "" (point_id leaves it out).
    const std::string schedule = j.value("schedule", std::string());
    if (schedule != effective_schedule(r.point)) r.point.schedule = schedule;
    r.point.ep = j.value("ep", std::int64_t{1});
    r.point.etp = j.value("etp", std::int64_t{1});
    r.point.dispatcher = dispatcher_from(j.value("dispatcher", std::string("alltoall")), where);
    r.dp = j.at("dp").get<std::int64_t>();
    r.point.micro_batch = j.at("micro_batch").get<std::int64_t>();
    r.num_microbatches = j.at("num_microbatches").get<std::int64_t>();
    r.point.recompute = recompute_from(j.at("recompute").get<std::string>(), where);
    r.point.distributed_optimizer = j.at("distributed_optimizer").get<bool>();
    if (j.value("data_sharding_stated", false)) {
      r.point.sharding = parse_data_sharding(j.at("data_sharding").get<std::string>());
      if (!r.point.sharding) {
        throw InputError(where, "rows", j.at("data_sharding").dump(),
                         "malformed sweep row: data_sharding must be none, optimizer, grads or "
                         "params");
      }
    }
    r.point.overlap = j.at("overlap").get<bool>();
    if (j.contains("offload")) {
      r.point.offload = parse_sweep_offload(j.at("offload").get<std::string>());
      if (!r.point.offload) {
        throw InputError(where, "rows", j.at("offload").dump(),
                         "malformed sweep row: offload must be none, activations or optimizer");
      }
    }
    if (j.contains("graphs")) {
      r.point.cuda_graphs = parse_sweep_graphs(j.at("graphs").get<std::string>());
      if (!r.point.cuda_graphs) {
        throw InputError(where, "rows", j.at("graphs").dump(),
                         "malformed sweep row: graphs must be none, per_layer or full_iteration");
      }
    }
    if (j.contains("placement")) {
      r.point.placement = j.at("placement").get<std::int64_t>();
      if (*r.point.placement < 1) {
        throw InputError(where, "rows", j.at("placement").dump(),
                         "malformed sweep row: placement must be a positive GPU count");
      }
    }
    r.step_time_s = j.at("step_time_s").get<double>();
    r.tokens_per_s_per_gpu = j.at("tokens_per_s_per_gpu").get<double>();
    r.mfu = j.at("mfu").get<double>();
    r.peak_bytes = j.at("peak_bytes").get<double>();
    r.hbm_bytes = j.at("hbm_bytes").get<double>();
    r.fits = j.at("fits_in_memory").get<bool>();
    r.binding = j.at("binding").get<std::string>();
    r.error = j.at("error").get<std::string>();
    r.megatron_args = j.value("megatron_args", std::string());  // absent in older journals
    r.extrapolated = j.value("extrapolated", false);            // likewise
    if (j.contains("p50_s")) {
      r.distribution = Percentiles{j.at("p10_s").get<double>(), j.at("p50_s").get<double>(),
                                   j.at("p90_s").get<double>(), j.at("mean_s").get<double>()};
    }
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where, "rows", "", std::string("malformed sweep row: ") + e.what());
  }
}

}  // namespace wallsim::models
