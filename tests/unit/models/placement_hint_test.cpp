// The placement hint: a group that leaves its NVLink domain, and the whole-node share of each
// domain that would keep every group inside one.
#include "models/placement_hint.hpp"

#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "models/run_config.hpp"
#include "sim/core/json_reader.hpp"
#include "test_models.hpp"

using Catch::Matchers::Contains;
using nlohmann::json;
using namespace wallsim;
using namespace wallsim::models;
using namespace wallsim::models::testing;

namespace {

const std::string kExample = source_path("configs/examples/llama3-8b-8gpu.json");

// Qwen3-30B-A3B (128 experts) on 256 GB200 (gb200-nvl72.json: trays of 4, racks of 72), tp 1,
// pp 1, one sequence per GPU, experts over `ep` ranks.
json moe_on_nvl72(int ep) {
  json doc = load_json_file(kExample);
  doc["model"] = "../models/qwen3-30b-a3b.json";
  doc["cluster"] = "../clusters/gb200-nvl72.json";
  doc["num_gpus"] = 256;
  doc["parallel"] = {{"tp", 1}, {"pp", 1}, {"ep", ep}};
  doc["training"]["global_batch"] = 256;
  return doc;
}

std::string hint_of(const json& doc) {
  const RunConfig config = run_config_from_json(doc, kExample);
  return placement_hint(config.layout, config.cluster.gpus_per_domain(),
                        config.cluster.gpus_per_node);
}

bool noted(const json& doc) {
  const RunConfig config = run_config_from_json(doc, kExample);
  for (const std::string& note : config.layout.notes) {
    if (note.find("placement.gpus_per_domain") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("expert groups that straddle NVL72 racks get the share of each rack that fits them",
          "[models][config]") {
  // With tp = 1 the EP axis is the fastest, so EP group k is ranks 32k … 32k + 31; the third,
  // 64–95, spans rack 0 (GPUs 0–71) and rack 1 (72–143). On 64 GPUs of each rack (16 of 18
  // trays) two groups fill a rack exactly; 68, the next share of whole trays below 72, still
  // cuts 64–95.
  const json doc = moe_on_nvl72(32);
  const std::string hint = hint_of(doc);
  CHECK_THAT(hint, Contains("expert (ETP x EP) groups of 32"));
  CHECK_THAT(hint, Contains("NVLink domain of 72 GPUs"));
  CHECK_THAT(hint, Contains("ranks 64-95"));
  CHECK_THAT(hint, Contains("placement.gpus_per_domain = 64"));
  CHECK(noted(doc));  // the run's notes carry it

  json placed = doc;
  placed["placement"] = {{"gpus_per_domain", 64}};
  CHECK(hint_of(placed).empty());
  CHECK_FALSE(noted(placed));
}

TEST_CASE("no placement hint where groups fit, domains are nodes, or no share can help",
          "[models][config]") {
  // EP 8: groups of 8 consecutive ranks, and 72 = 9 · 8.
  CHECK(hint_of(moe_on_nvl72(8)).empty());
  // EP 128: larger than any share of a 72-GPU rack.
  CHECK(hint_of(moe_on_nvl72(128)).empty());
  // The same EP 32 on DGX H100 nodes: the domain is the node, nothing to place.
  json dgx = moe_on_nvl72(32);
  dgx["cluster"] = "../clusters/dgx-h100.json";
  CHECK(hint_of(dgx).empty());
  // Dense tensor parallelism of 8 on the rack: 72 is a multiple of 8.
  json dense = load_json_file(kExample);
  dense["cluster"] = "../clusters/gb200-nvl72.json";
  dense["num_gpus"] = 256;
  dense["parallel"] = {{"tp", 8}, {"pp", 1}};
  dense["training"]["global_batch"] = 32;
  CHECK(hint_of(dense).empty());
}
