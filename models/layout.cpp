#include "models/layout.hpp"

#include "sim/core/input_error.hpp"

namespace wallsim::models {
namespace {

std::string str(std::int64_t value) {
  return std::to_string(value);
}

void require(bool ok, const std::string& where, const std::string& path, std::int64_t value,
             const std::string& problem) {
  if (!ok) throw InputError(where, path, str(value), problem);
}

ParallelSizes derive_sizes(const ParallelSpec& p, std::int64_t num_gpus, const std::string& where) {
  const std::int64_t model_parallel = p.tp * p.cp * p.pp;
  require(num_gpus % model_parallel == 0, where, "num_gpus", num_gpus,
          "must be a multiple of tp·cp·pp = " + str(p.tp) + "·" + str(p.cp) + "·" + str(p.pp) +
              " = " + str(model_parallel));
  ParallelSizes sizes{p.tp, p.cp, 1, num_gpus / model_parallel, p.pp};
  if (p.dp) {
    require(*p.dp == sizes.dp, where, "parallel.dp", *p.dp,
            "must equal num_gpus / (tp·cp·pp) = " + str(sizes.dp) + " (or be left out)");
  }
  return sizes;
}

void check_model_split(const ModelSpec& m, const ParallelSpec& p, const std::string& where) {
  require(m.heads % p.tp == 0, where, "parallel.tp", p.tp,
          "must divide the attention heads (" + str(m.heads) + ")");
  require(m.kv_heads % p.tp == 0, where, "parallel.tp", p.tp,
          "must divide the key/value heads (kv_heads = " + str(m.kv_heads) + ")");
  require(m.ffn_hidden % p.tp == 0, where, "parallel.tp", p.tp,
          "must divide ffn_hidden (" + str(m.ffn_hidden) + ")");
}

void check_batch(const TrainingSpec& t, const ParallelSizes& sizes, const std::string& where) {
  const std::int64_t per_step = t.micro_batch * sizes.dp;
  require(t.global_batch % per_step == 0, where, "training.global_batch", t.global_batch,
          "must be a multiple of micro_batch·dp = " + str(t.micro_batch) + "·" + str(sizes.dp) +
              " = " + str(per_step));
}

void check_sequence(const TrainingSpec& t, const ParallelSizes& sizes, bool sequence_parallel,
                    const std::string& where) {
  // Load-balanced CP cuts the sequence into 2·cp chunks (Megatron get_batch_on_this_cp_rank).
  const std::int64_t cp_chunks = sizes.cp > 1 ? 2 * sizes.cp : 1;
  require(t.seq_len % cp_chunks == 0, where, "training.seq_len", t.seq_len,
          "must be a multiple of 2·cp = " + str(cp_chunks) + " with context parallelism");
  if (sequence_parallel) {
    require(
        (t.seq_len / sizes.cp) % sizes.tp == 0, where, "training.seq_len", t.seq_len,
        "seq_len / cp must be a multiple of tp = " + str(sizes.tp) + " with sequence parallelism");
  }
}

bool check_schedule(const ParallelSpec& p, const TrainingSpec& t, const std::string& where) {
  require(p.vpp == 1 || p.pp > 1, where, "parallel.vpp", p.vpp,
          "virtual pipeline chunks need pp > 1");
  if (t.schedule == "interleaved") {
    require(p.vpp > 1, where, "parallel.vpp", p.vpp,
            "training.schedule = \"interleaved\" needs vpp > 1");
  }
  return p.vpp > 1;
}

}  // namespace

Layout make_layout(const ModelSpec& model, const ParallelSpec& parallel,
                   const TrainingSpec& training, std::int64_t num_gpus, const std::string& where) {
  Layout layout;
  layout.sizes = derive_sizes(parallel, num_gpus, where);
  layout.order = parallel.order;
  layout.vpp = parallel.vpp;
  check_model_split(model, parallel, where);
  layout.sequence_parallel = parallel.sequence_parallel && parallel.tp > 1;
  if (parallel.sequence_parallel && parallel.tp == 1) {
    layout.notes.push_back("sequence_parallel switched off: it needs tp > 1 (as Megatron does)");
  }
  check_batch(training, layout.sizes, where);
  check_sequence(training, layout.sizes, layout.sequence_parallel, where);
  layout.interleaved = check_schedule(parallel, training, where);
  layout.num_microbatches = training.global_batch / (training.micro_batch * layout.sizes.dp);
  layout.placement = place_layers({model.layers, parallel.pp, parallel.vpp,
                                   parallel.first_stage_layers, parallel.last_stage_layers},
                                  where);
  if (!layout.placement.note.empty()) layout.notes.push_back(layout.placement.note);
  return layout;
}

}  // namespace wallsim::models
