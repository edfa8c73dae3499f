#include <algorithm>
#include <sstream>

#include <catch2/catch.hpp>

#include "calibration/profile.hpp"
#include "models/sweep/sweep_evaluate.hpp"
#include "models/sweep/sweep_journal.hpp"
#include "models/sweep/sweep_report.hpp"
#include "models/sweep/sweep_row.hpp"
#include "models/sweep/sweep_runner.hpp"
#include "models/sweep/sweep_writers.hpp"

using namespace wallsim;
using namespace wallsim::models;

namespace {

const std::string kConfig =
    std::string(WALLSIM_SOURCE_ROOT) + "/configs/examples/llama3-8b-8gpu.json";

struct Fixture {
  SweepBase base =
      load_sweep_base(kConfig, {"simulation.network=analytical", "training.global_batch=16"}, 8);
  Profile profile = load_profile(shipped_profile_path(base.parsed.cluster.gpu));
  SweepSpace space = [] {
    SweepSpace s;
    s.tp = {2, 4, 8};
    s.pp = {1, 2};
    s.recompute = {Recompute::selective, Recompute::full};
    return s;
  }();
  SweepHardware hw{profile.gpu, profile.comm, profile.gpu.hbm_bytes};

  SweepReport run(SweepRunOptions options) const { return run_sweep(base, space, hw, options); }
};

std::string csv(const SweepReport& report) {
  std::ostringstream out;
  write_sweep_csv(report, out);
  return out.str();
}

}  // namespace

TEST_CASE("a sweep gives the same rows with one worker and with three", "[sweep]") {
  const Fixture f;
  SweepRunOptions one;
  one.jobs = 1;
  one.all_recompute = true;
  SweepRunOptions three = one;
  three.jobs = 3;
  const SweepReport a = f.run(one);
  REQUIRE(a.counts.simulated >= 6);  // tp ∈ {2,4,8} × pp ∈ {1,2} × 2 recompute, minus prunes
  CHECK(a.counts.failed == 0);
  CHECK(csv(a) == csv(f.run(three)));
  for (std::size_t i = 1; i < a.rows.size(); ++i) {
    CHECK(a.rows[i - 1].step_time_s <= a.rows[i].step_time_s);
  }
}

TEST_CASE("resuming from an interrupted sweep's journal gives the uninterrupted result",
          "[sweep]") {
  const Fixture f;
  SweepRunOptions options;
  options.jobs = 2;
  std::ostringstream journal;
  const std::string fp = sweep_fingerprint(f.base, f.space);
  write_journal_header(journal, fp, options.shard);
  options.on_row = [&](const SweepRow& row, std::int64_t, std::int64_t, double) {
    write_journal_row(journal, row);
  };
  const SweepReport uninterrupted = f.run(options);
  const std::int64_t total = uninterrupted.counts.simulated;

  // Interrupt after three rows, the fourth half written.
  std::string text = journal.str();
  std::size_t cut = 0;
  for (int line = 0; line < 4; ++line) cut = text.find('\n', cut) + 1;
  text = text.substr(0, cut) + text.substr(cut, 20);
  std::istringstream partial(text);
  SweepRunOptions resume;
  resume.jobs = 2;
  resume.already_done = read_journal(partial, fp, resume.shard, "journal");
  REQUIRE(resume.already_done.size() == 3);
  std::int64_t simulated_again = 0;
  resume.on_row = [&](const SweepRow&, std::int64_t done, std::int64_t all, double) {
    ++simulated_again;
    CHECK(all == total);
    CHECK(done > 3);
  };
  const SweepReport resumed = f.run(resume);
  CHECK(simulated_again == total - 3);
  CHECK(csv(resumed) == csv(uninterrupted));
}

TEST_CASE(
    "progress reports the share of the estimated work done, each point weighed by its "
    "layer passes",
    "[sweep]") {
  // Every point of the fixture simulates 32 layers in symmetric fidelity, so its estimated cost
  // is the micro-batches it simulates: its micro-batches per step (global batch 16 / dp), e.g. a
  // tp 2 pp 1 point (dp 4, 4 micro-batches) weighs half a tp 8 pp 1 point (dp 1, 16); or, where
  // a long 1F1B step is extrapolated (tp 2 pp 2: 8 micro-batches), the short steps' pp + 1 and
  // pp + 2 (3 + 4). One worker reports points in order, so the shares are the running sums over
  // the total.
  const Fixture f;
  SweepRunOptions options;
  options.jobs = 1;
  options.all_recompute = true;
  std::vector<double> shares;
  std::vector<std::int64_t> microbatches;
  options.on_row = [&](const SweepRow& row, std::int64_t, std::int64_t, double work_done) {
    shares.push_back(work_done);
    microbatches.push_back(row.extrapolated ? 2 * row.point.pp + 3 : row.num_microbatches);
  };
  const SweepReport report = f.run(options);
  REQUIRE(shares.size() == static_cast<std::size_t>(report.counts.simulated));
  REQUIRE(shares.size() >= 6);
  double total = 0;
  for (const std::int64_t m : microbatches) total += static_cast<double>(m);
  double running = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    running += static_cast<double>(microbatches[i]);
    CHECK(shares[i] == Approx(running / total).epsilon(1e-12));
  }
  CHECK(shares.back() == 1.0);
  // The points differ in weight, so counting points would give other shares; one of them is
  // extrapolated.
  CHECK(*std::max_element(microbatches.begin(), microbatches.end()) >
        *std::min_element(microbatches.begin(), microbatches.end()));
  CHECK(std::any_of(report.rows.begin(), report.rows.end(),
                    [](const SweepRow& row) { return row.extrapolated; }));
}

TEST_CASE(
    "a heavier recompute of a layout that fits with a lighter one is pruned, and it is the "
    "slower",
    "[sweep]") {
  // The fixture's space offers selective and full recompute of each layout. Full recompute
  // runs every op of selective's step plus the rest of each layer's forward again, so where
  // selective fits, full is slower: the sweep prunes it, and simulating both shows the order.
  const Fixture f;
  SweepRunOptions options;
  options.jobs = 2;
  const SweepReport pruned = f.run(options);
  options.all_recompute = true;
  const SweepReport every = f.run(options);
  const SweepCounts& c = pruned.counts;
  CHECK(c.points == c.pruned_by_layout + c.pruned_by_memory + c.pruned_by_recompute + c.simulated -
                        c.recompute_fallbacks);
  CHECK(c.recompute_fallbacks == 0);
  CHECK(every.counts.pruned_by_recompute == 0);
  CHECK(c.simulated + c.pruned_by_recompute == every.counts.simulated);
  REQUIRE(c.pruned_by_recompute > 0);
  std::int64_t full_faster = 0;
  std::int64_t compared = 0;
  for (const SweepRow& full : every.rows) {
    if (full.point.recompute != Recompute::full) continue;
    const std::int64_t lighter = f.space.with_recompute(full.index, 0);  // selective
    const auto sibling = std::find_if(every.rows.begin(), every.rows.end(),
                                      [&](const SweepRow& r) { return r.index == lighter; });
    const bool kept = std::any_of(pruned.rows.begin(), pruned.rows.end(),
                                  [&](const SweepRow& r) { return r.index == full.index; });
    // Kept exactly when its selective sibling did not pass the memory check.
    CHECK(kept == (sibling == every.rows.end()));
    if (sibling == every.rows.end()) continue;
    ++compared;
    if (full.step_time_s < sibling->step_time_s) ++full_faster;
  }
  CHECK(compared == c.pruned_by_recompute);
  CHECK(full_faster == 0);
  // The rows both runs simulated are the same rows.
  for (const SweepRow& row : pruned.rows) {
    const auto same = std::find_if(every.rows.begin(), every.rows.end(),
                                   [&](const SweepRow& r) { return r.index == row.index; });
    REQUIRE(same != every.rows.end());
    CHECK(same->step_time_s == row.step_time_s);
  }
  CHECK(pruned.fingerprint != every.fingerprint);
}

TEST_CASE("a lighter recompute that did not fit after all brings its heavier one back", "[sweep]") {
  // A row of a resumed journal stands in for a simulation that found the lighter recompute
  // over HBM: the sweep then simulates the pruned heavier recompute of that layout.
  const Fixture f;
  SweepRunOptions options;
  options.jobs = 1;
  const SweepReport first = f.run(options);
  REQUIRE(first.counts.pruned_by_recompute > 0);
  const auto lighter = std::find_if(first.rows.begin(), first.rows.end(), [&](const SweepRow& r) {
    return r.point.recompute == Recompute::selective;
  });
  REQUIRE(lighter != first.rows.end());
  SweepRow over = *lighter;
  over.fits = false;
  const std::int64_t heavier = f.space.with_recompute(over.index, 1);  // full
  CHECK(recompute_fallback(f.base, f.space, over, f.hw.hbm_bytes)->index == heavier);
  CHECK_FALSE(recompute_fallback(f.base, f.space, *lighter, f.hw.hbm_bytes).has_value());

  options.already_done = {over};
  const SweepReport second = f.run(options);
  CHECK(second.counts.recompute_fallbacks == 1);
  CHECK(second.counts.simulated == first.counts.simulated + 1);
  CHECK(second.rows.size() == first.rows.size() + 1);
  CHECK(std::any_of(second.rows.begin(), second.rows.end(),
                    [&](const SweepRow& r) { return r.index == heavier; }));
}

TEST_CASE("shards prune the same recomputes as the whole sweep, and a fallback crosses shards",
          "[sweep]") {
  // A lighter recompute found over HBM (a resumed row, as above) sits in one shard; its heavier
  // sibling, pruned in whichever shard holds it, is simulated by the lighter one's shard, so the
  // merged shards equal the whole sweep, counts included.
  const Fixture f;
  SweepRunOptions whole_options;
  whole_options.jobs = 1;
  const SweepReport plain = f.run(whole_options);
  const auto lighter = std::find_if(plain.rows.begin(), plain.rows.end(), [&](const SweepRow& r) {
    return r.point.recompute == Recompute::selective;
  });
  REQUIRE(lighter != plain.rows.end());
  SweepRow over = *lighter;
  over.fits = false;
  whole_options.already_done = {over};
  const SweepReport whole = f.run(whole_options);
  REQUIRE(whole.counts.recompute_fallbacks == 1);

  constexpr int kShards = 3;
  const std::int64_t heavier = f.space.with_recompute(over.index, 1);
  CHECK(over.index % kShards != heavier % kShards);  // the fallback does cross shards
  std::vector<SweepReport> shards;
  std::vector<std::string> names;
  for (int i = 0; i < kShards; ++i) {
    SweepRunOptions options;
    options.jobs = 1;
    options.shard = ShardSpec{i, kShards};
    if (over.index % kShards == i) options.already_done = {over};
    shards.push_back(f.run(options));
    names.push_back("shard " + std::to_string(i));
  }
  const SweepReport merged = merge_reports(shards, names);
  CHECK(csv(merged) == csv(whole));
  CHECK(merged.counts.pruned_by_recompute == whole.counts.pruned_by_recompute);
  CHECK(merged.counts.recompute_fallbacks == 1);
  CHECK(merged.counts.simulated == whole.counts.simulated);
}

TEST_CASE("the time left follows the rate of the work done so far", "[sweep]") {
  // A quarter of the work in 10 s leaves three quarters: 30 s at the same rate.
  CHECK(remaining_seconds(10.0, 0.25) == Approx(30.0));
  CHECK(remaining_seconds(10.0, 1.0) == 0.0);
  CHECK(remaining_seconds(10.0, 0.0) == 0.0);  // no rate yet
  CHECK(remaining_seconds(0.0, 0.5) == 0.0);
}

namespace {

// A sweep of tp 2 over one knob's three values (`--vary` assignment), all simulated.
SweepReport sweep_of(const std::string& vary) {
  Fixture f;
  f.space = SweepSpace{};
  f.space.tp = {2};
  apply_vary(f.space, vary);
  SweepRunOptions options;
  options.jobs = 1;
  SweepReport report = f.run(options);
  REQUIRE(report.counts.simulated == 3);
  // Every point survives the journal's JSON.
  for (const SweepRow& r : report.rows) {
    CHECK(row_from_json(row_to_json(r), "journal").point == r.point);
  }
  return report;
}

// The row whose point has `value` for the knob `member`.
template <typename Knob>
SweepRow row_with(const SweepReport& report, std::optional<Knob> SweepPoint::*member, Knob value) {
  for (const SweepRow& r : report.rows) {
    if (r.point.*member == value) return r;
  }
  FAIL("no row");
  return report.rows.front();
}

}  // namespace

TEST_CASE("a sweep over offloading choices ranks them and carries them through its outputs",
          "[sweep]") {
  const SweepReport report = sweep_of("offload=none,activations,optimizer");
  const SweepRow none = row_with(report, &SweepPoint::offload, SweepOffload::kNone);
  const SweepRow activations = row_with(report, &SweepPoint::offload, SweepOffload::kActivations);
  const SweepRow optimizer = row_with(report, &SweepPoint::offload, SweepOffload::kOptimizer);
  // Offloading frees memory and, over PCIe with this little compute per layer, costs time.
  CHECK(activations.peak_bytes < none.peak_bytes);
  CHECK(optimizer.peak_bytes < none.peak_bytes);
  CHECK(optimizer.step_time_s > none.step_time_s);
  // The choice reaches the CSV.
  const std::string text = csv(report);
  CHECK(text.find(",config,extrapolated,offload\n") != std::string::npos);
  CHECK(text.find("-offload-opt.json,false,optimizer\n") != std::string::npos);
}

TEST_CASE("a sweep over CUDA-graph scopes ranks them and carries them through its outputs",
          "[sweep]") {
  const SweepReport report = sweep_of("graphs=none,per_layer,full_iteration");
  const SweepRow eager = row_with(report, &SweepPoint::cuda_graphs, CudaGraphs::kNone);
  const SweepRow per_layer = row_with(report, &SweepPoint::cuda_graphs, CudaGraphs::kPerLayer);
  const SweepRow full = row_with(report, &SweepPoint::cuda_graphs, CudaGraphs::kFullIteration);
  // Fewer host issues never slow the step; per-layer graphs' static inputs and pool cost memory,
  // one graph for the whole forward-backward none (models/memory.cpp).
  CHECK(per_layer.step_time_s <= eager.step_time_s);
  CHECK(full.step_time_s <= per_layer.step_time_s);
  CHECK(per_layer.peak_bytes > eager.peak_bytes);
  CHECK(full.peak_bytes == eager.peak_bytes);
  // The scope reaches the CSV.
  const std::string text = csv(report);
  CHECK(text.find(",config,extrapolated,graphs\n") != std::string::npos);
  CHECK(text.find("-graphs.json,false,per_layer\n") != std::string::npos);
}

TEST_CASE("a point's simulation footprint counts its layer passes", "[sweep]") {
  const Fixture f;
  SweepPoint point;
  point.tp = 2;
  point.pp = 2;
  const RunConfig symmetric = point_run_config(f.base, point);
  // Llama 3 8B has 32 layers; 8 GPUs at tp2 pp2 leave dp = 2, so global batch 16 at micro-batch
  // 1 is 16 / (1·2) = 8 micro-batches: 8·32 = 256 layer passes over the stages together.
  CHECK(simulation_footprint(symmetric) == Approx(256 * kFootprintBytesPerLayerPass));
  // Full fidelity simulates all 8 / 2 = 4 ranks of each stage.
  RunConfig full = symmetric;
  full.simulation.fidelity = Fidelity::kFull;
  CHECK(simulation_footprint(full) == Approx(4 * 256 * kFootprintBytesPerLayerPass));
}

TEST_CASE("a memory budget smaller than any point runs points one at a time, same rows",
          "[sweep]") {
  const Fixture f;
  SweepRunOptions one;
  one.jobs = 1;
  SweepRunOptions gated;
  gated.jobs = 3;
  gated.simulation_memory_bytes = 1;  // every point exceeds it, so each runs alone
  CHECK(csv(f.run(one)) == csv(f.run(gated)));
}
