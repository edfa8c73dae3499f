// wallsim report.html: the summary page (cards, walls, tables). Reads the JSON embedded in the
// page (#summary-data, #timeline-data); timeline.js draws the timeline and the memory curves.
"use strict";

const S = JSON.parse(document.getElementById("summary-data").textContent);
const TL = JSON.parse(document.getElementById("timeline-data").textContent || "null");
const GiB = 1024 * 1024 * 1024;
const COLORS = {
  ideal: "#2f6f9f", compute_inefficiency: "#8fb3d1", gemm: "#4e79a7", attention: "#59a14f",
  elementwise: "#9c755f", optimizer: "#b07aa1", tp: "#f28e2b", cp: "#edc948", ep: "#e15759",
  dp: "#76b7b2", pp: "#ff9da7", bubble: "#bab0ac", host: "#8c564b", other: "#d4d4d4",
  weights: "#4e79a7", grads: "#f28e2b", activations: "#59a14f", buffers: "#bab0ac",
};
const SVGNS = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const child of children.flat()) if (child != null) node.append(child);
  return node;
}
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const child of children.flat()) if (child != null) node.append(child);
  return node;
}
const fmtS = (s) => (s >= 1 ? s.toFixed(3) + " s" : s >= 1e-3 ? (s * 1e3).toFixed(2) + " ms" : (s * 1e6).toFixed(1) + " µs");
const fmtPct = (x, d = 1) => (100 * x).toFixed(d) + "%";
const fmtGiB = (b) => (b / GiB).toFixed(2) + " GiB";
const fmtBytes = (b) => (b >= 1e12 ? (b / 1e12).toFixed(2) + " TB" : b >= 1e9 ? (b / 1e9).toFixed(2) + " GB" : (b / 1e6).toFixed(1) + " MB");
const section = (title, ...body) => el("section", {}, el("h2", { text: title }), ...body);

function legend(keys) {
  return el("div", { class: "legend" }, keys.map((k) => el("span", {}, el("i", { style: "background:" + (COLORS[k] || "#999") }), k.replace(/_/g, " "))));
}

function table(headers, rows) {
  const head = el("tr", {}, headers.map((h) => el("th", { class: h.num ? "num" : "", text: h.label || h })));
  const body = rows.map((r) => el("tr", {}, r.map((c, i) => {
    const cell = el("td", { class: headers[i].num ? "num" : "" });
    if (c instanceof Node) cell.append(c); else cell.textContent = c;
    return cell;
  })));
  return el("table", {}, el("thead", {}, head), el("tbody", {}, body));
}

function meter(fraction) {
  return el("div", { class: "bar" }, el("span", { style: "width:" + Math.min(100, Math.max(0, 100 * fraction)).toFixed(1) + "%" }));
}

// A horizontal stacked bar of named parts, with a scale of `total`.
function stackedBar(parts, total, width, height, marker) {
  const root = svg("svg", { width: "100%", height: height + 16, viewBox: `0 0 ${width} ${height + 16}`, preserveAspectRatio: "xMinYMid meet" });
  let x = 0;
  for (const [name, value] of parts) {
    const w = total > 0 ? (value / total) * width : 0;
    if (w <= 0) continue;
    root.append(svg("rect", { x, y: 0, width: w, height, fill: COLORS[name] || "#999" }, svg("title", { text: `${name}: ${value}` })));
    x += w;
  }
  if (marker) {
    const mx = Math.min(width - 1, (marker.at / total) * width);
    root.append(svg("line", { x1: mx, x2: mx, y1: -2, y2: height + 2, stroke: "#c0392b", "stroke-width": 2 }));
    root.append(svg("text", { x: Math.max(0, mx - 4), y: height + 13, "text-anchor": "end", text: marker.label }));
  }
  return root;
}

function header() {
  const sim = S.simulation || {};
  return el("header", {},
    el("h1", { text: `${S.model} on ${S.num_gpus} GPUs (${S.cluster})` }),
    el("p", { class: "sub", text: `layout ${S.layout} · ${sim.fidelity} fidelity, ${sim.network} network · ${sim.simulated_ranks} simulated ranks · critical rank ${sim.critical_rank} (stage ${sim.critical_stage})` }));
}

function card(label, value, note, extraClass, id) {
  const attrs = { class: "card " + (extraClass || "") };
  if (id) attrs.id = id;
  return el("div", attrs, el("div", { class: "label", text: label }), el("div", { class: "value", text: value }), note ? el("div", { class: "note", text: note }) : null);
}

// summary.json's prediction_interval: the step times that wallsim's errors on published runs
// like this one allow (an empirical band, not a confidence interval).
function bandText() {
  const b = S.prediction_interval;
  if (!b) return "";
  const dropped = b.unmatched ? `; too few published runs to also match ${b.unmatched}` : "";
  return `; validation band ${fmtS(b.low_s)}–${fmtS(b.high_s)} (p10–p90 of the errors on ${b.rows} published runs: ${b.basis}${dropped})`;
}

// summary.json's stragglers: what they cost this step and where it lands on the critical rank.
function stragglerText() {
  const x = S.stragglers;
  if (!x) return "";
  const parts = x.by_part.slice(0, 3).map((p) => `${p.part} ${p.s >= 0 ? "+" : ""}${fmtS(p.s)}`).join(", ");
  return `; stragglers cost ${fmtS(x.cost_s)} per step` + (parts ? ` (${parts})` : "");
}

function headline() {
  const w = S.walls;
  // A peak under HBM still binds when it eats into the fit margin (memory.fit_margin).
  const memoryMargin = w.binding_margin >= 0 ? `peak ${fmtPct(w.binding_margin)} over HBM`
    : `peak within ${fmtPct(-w.binding_margin)} of HBM, inside the ${fmtPct(S.memory.fit_margin || 0, 0)} kept free`;
  const margin = w.binding === "memory" ? memoryMargin : `by ${fmtPct(w.binding_margin)} of the step`;
  return el("div", { class: "cards", id: "headline" },
    card("Step time", fmtS(S.iteration_time_s), `${S.tokens_per_iteration.toLocaleString("en-US")} tokens` + bandText() + stragglerText(), "", "step-time"),
    card("Tokens/s per GPU", S.tokens_per_s_per_gpu.toFixed(1), null, "", "tokens"),
    card("Model TFLOP/s per GPU", S.model_tflops_per_gpu.toFixed(1), `peak ${(S.peak_flops_per_gpu / 1e12).toFixed(0)}`, "", "tflops"),
    card("MFU", fmtPct(S.mfu), null, "", "mfu"),
    card("Peak memory", fmtGiB(S.memory.peak_bytes), `of ${fmtGiB(S.memory.hbm_bytes)} HBM` + (S.fits_in_memory ? "" : " — does not fit"), S.fits_in_memory ? "" : "nofit", "peak-memory"),
    card("Binding wall", w.binding, margin, "binding", "binding-wall"));
}

function stepSplit() {
  const t = S.time;
  const parts = [["ideal", t.ideal_s], ["compute_inefficiency", t.compute_inefficiency_s]];
  for (const g of ["tp", "cp", "ep", "dp", "pp"]) parts.push([g, t.exposed_comm_s[g]]);
  parts.push(["bubble", t.bubble_s], ["host", t.host_s], ["other", t.other_s]);
  const rows = parts.filter(([, v]) => v > 0).map(([k, v]) => [k.replace(/_/g, " "), fmtS(v), fmtPct(v / t.step_s)]);
  return section("Where the step went (critical rank)",
    stackedBar(parts, t.step_s, 1200, 26), legend(parts.filter(([, v]) => v > 0).map(([k]) => k)),
    table(["part", { label: "time", num: true }, { label: "share", num: true }], rows));
}

function memoryWall() {
  const hbm = S.memory.hbm_bytes;
  const stages = S.memory.per_stage;
  const scale = Math.max(hbm, ...stages.map((s) => Math.max(s.peak, s.simulated_peak))) * 1.05;
  const keys = ["weights", "grads", "optimizer", "activations", "buffers"];
  const bars = stages.map((s) => el("div", {}, el("div", { class: "note", text: `stage ${s.stage}: ${fmtGiB(s.peak)} (simulated ${fmtGiB(s.simulated_peak)})` }),
    stackedBar(keys.map((k) => [k, s[k]]), scale, 380, 14, { at: hbm, label: "HBM" })));
  const panel = el("div", { class: "panel" + (S.walls.binding === "memory" ? " binding" : ""), id: "wall-memory" },
    el("h3", { text: `Memory: ${fmtPct(S.walls.memory.utilization, 0)} of HBM, largest part ${S.walls.memory.contributor}` }), legend(keys), bars);
  if (S.fit_suggestions && S.fit_suggestions.length) {
    panel.append(el("h3", { text: "What would make it fit" }), table(["change", { label: "peak", num: true }, "result", { label: "step", num: true }],
      S.fit_suggestions.map((f) => [f.change, f.valid ? fmtGiB(f.peak_bytes) : "—", f.valid ? el("span", { class: f.fits ? "fits" : "nofit", text: f.fits ? "fits" : "does not fit" }) : f.note,
        f.step_s !== undefined ? `${f.step_s.toFixed(3)} s (${f.step_change >= 0 ? "+" : ""}${(100 * f.step_change).toFixed(1)}%)` : "—"])));
  }
  return panel;
}

function commWall() {
  const c = S.communication;
  const groups = c.exposed_by_group;
  const panel = el("div", { class: "panel" + (S.walls.binding === "communication" ? " binding" : ""), id: "wall-communication" },
    el("h3", { text: `Communication: ${fmtPct(S.walls.communication.share)} of the step exposed, largest ${S.walls.communication.contributor}` }),
    table(["group", "tier", { label: "exposed", num: true }, { label: "share", num: true }],
      groups.map((g) => [g.group, g.tier, fmtS(g.exposed_s), fmtPct(g.exposed_s / S.time.step_s)])),
    el("p", { class: "note", text: `Exposed by tier: NVLink ${fmtS(c.exposed_by_tier_s.nvlink)}, network (InfiniBand) ${fmtS(c.exposed_by_tier_s.network)}` }));
  if (c.link_tiers.length) {
    panel.append(el("h3", { text: "Link tiers" }), table(["tier", { label: "links", num: true }, { label: "bytes", num: true }, { label: "busiest", num: true }, { label: "mean", num: true }],
      c.link_tiers.map((t) => [t.tier, String(t.links), fmtBytes(t.bytes), fmtPct(t.max_utilization), fmtPct(t.mean_utilization)])));
  }
  return panel;
}

function computeWall() {
  const t = S.time;
  const kinds = ["gemm", "attention", "elementwise", "optimizer"];
  const rows = kinds.filter((k) => t.compute_by_kind_s[k] > 0).map((k) => {
    const ideal = (t.ideal_by_kind_s || {})[k] || 0;
    const eff = t.compute_by_kind_s[k] > 0 ? ideal / t.compute_by_kind_s[k] : 0;
    return [k, fmtS(t.compute_by_kind_s[k]), fmtS(ideal), ideal > 0 ? el("span", {}, meter(eff), fmtPct(eff)) : "memory-bound"];
  });
  return el("div", { class: "panel" + (S.walls.binding === "compute" ? " binding" : ""), id: "wall-compute" },
    el("h3", { text: `Compute efficiency: MFU ${fmtPct(S.mfu)}, ${fmtPct(S.walls.compute.share)} of the step lost (largest ${S.walls.compute.contributor})` }),
    el("p", { class: "note", text: `bubble ${fmtS(t.bubble_s)} (${fmtPct(t.bubble_s / t.step_s)}), compute inefficiency ${fmtS(t.compute_inefficiency_s)}` }),
    table(["kernel", { label: "time", num: true }, { label: "at peak", num: true }, "efficiency"], rows));
}

// The critical rank's kernel families by time (summary.json compute.kernel_families).
const KERNEL_ROWS = 20;
function kernelFamilies() {
  const families = (S.compute && S.compute.kernel_families) || [];
  if (!families.length) return section("Kernel families", el("p", { class: "sub", text: "Not in this summary." }));
  const achieved = (f) => f.flops > 0 ? el("span", {}, meter(f.peak_fraction), `${f.tflops_per_s.toFixed(1)} TFLOP/s, ${fmtPct(f.peak_fraction, 0)} of peak`)
    : f.bytes > 0 ? el("span", {}, meter(f.hbm_fraction), `${f.GBps.toFixed(0)} GB/s, ${fmtPct(f.hbm_fraction, 0)} of HBM`) : "—";
  const rows = families.slice(0, KERNEL_ROWS).map((f) => [f.family, f.kind, String(f.ops), fmtS(f.time_s), fmtPct(f.share), achieved(f), f.host_wait_s > 0 ? fmtS(f.host_wait_s) : "—"]);
  const more = families.length - rows.length;
  return section(`Kernel families on the critical rank (rank ${S.simulation.critical_rank})`, el("div", { class: "panel", id: "kernel-families" },
    el("p", { class: "sub", text: "Each family is one kernel wherever it runs (every layer and micro-batch). Time is its busy time on the compute stream, share that of all compute; achieved is FLOP/s against the dense peak of its precision for GEMMs and attention, bytes/s against the HBM bandwidth for memory-bound kernels; host wait is the time the stream sat idle because the host had not issued the kernel yet." }),
    table(["family", "kind", { label: "ops", num: true }, { label: "time", num: true }, { label: "share", num: true }, "achieved", { label: "host wait", num: true }], rows),
    more > 0 ? el("p", { class: "note", text: `${more} more ${more === 1 ? "family" : "families"} (${fmtS(families.slice(KERNEL_ROWS).reduce((a, f) => a + f.time_s, 0))} together) in summary.json, compute.kernel_families.` }) : null));
}

// With --samples: a histogram of the sampled step times with p10, p50 and p90 marked.
function distribution() {
  const D = S.distribution;
  if (!D) return null;
  const steps = D.steps_s, lo = Math.min(...steps), hi = Math.max(...steps);
  const bins = Math.max(1, Math.min(30, Math.ceil(Math.sqrt(steps.length))));
  const width = (hi - lo) / bins || 1;
  const counts = new Array(bins).fill(0);
  for (const x of steps) counts[Math.min(bins - 1, Math.floor((x - lo) / width))]++;
  const W = 640, H = 150, top = 14, bottom = 30, most = Math.max(...counts);
  const xOf = (t) => 20 + ((t - lo) / (hi - lo || 1)) * (W - 40);
  const plot = svg("svg", { width: "100%", height: H, viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "xMinYMid meet" });
  counts.forEach((c, i) => {
    const h = (c / most) * (H - top - bottom);
    plot.append(svg("rect", { x: xOf(lo + i * width) + 1, y: H - bottom - h, width: Math.max(1, xOf(lo + width) - xOf(lo) - 2), height: h, fill: COLORS.ideal }));
  });
  plot.append(svg("line", { x1: 20, x2: W - 20, y1: H - bottom, y2: H - bottom, class: "axis" }));
  for (const [name, t] of [["p10", D.p10_s], ["p50", D.p50_s], ["p90", D.p90_s]]) {
    plot.append(svg("line", { x1: xOf(t), x2: xOf(t), y1: top - 4, y2: H - bottom, stroke: "#c0392b", "stroke-dasharray": "3 2" }));
    plot.append(svg("text", { x: xOf(t) + 3, y: top + 2, text: `${name} ${fmtS(t)}` }));
  }
  plot.append(svg("text", { x: 20, y: H - 10, text: fmtS(lo) }), svg("text", { x: W - 20, y: H - 10, "text-anchor": "end", text: fmtS(hi) }));
  const share = D.binding_share;
  return section(`Step time over ${D.samples} sampled steps`, el("div", { class: "panel", id: "distribution" },
    el("p", { class: "sub", text: `Mean ${fmtS(D.mean_s)}; the binding wall was compute in ${fmtPct(share.compute, 0)}, communication in ${fmtPct(share.communication, 0)} and memory in ${fmtPct(share.memory, 0)} of the samples. The rest of this page describes sample ${D.median_sample}, the median step.` }),
    (D.critical_ranks || []).length ? el("p", { class: "note", id: "critical-ranks", text: "Ended the step last (critical rank): " + D.critical_ranks.map((c) => `rank ${c.rank} in ${fmtPct(c.share, 0)}`).join(", ") + " of the samples" + (S.simulation.fidelity === "symmetric" ? " (symmetric fidelity: the replayed member of each class)." : ".") }) : null,
    plot));
}

function sensitivities() {
  if (!S.sensitivities || !S.sensitivities.length) {
    return section("Sensitivities", el("p", { class: "sub", text: "Not computed: run with --sensitivity to re-simulate with ±10% NVLink, IB, GEMM efficiency and HBM bandwidth, half the host's issue cost and the next CUDA-graph scope." }));
  }
  const maxAbs = Math.max(1e-9, ...S.sensitivities.map((x) => Math.abs(x.change)));
  const rows = S.sensitivities.map((x) => {
    const bar = svg("svg", { width: 240, height: 12 }, svg("line", { x1: 120, x2: 120, y1: 0, y2: 12, class: "axis" }),
      svg("rect", { x: x.change < 0 ? 120 + (x.change / maxAbs) * 118 : 120, y: 2, width: Math.abs(x.change / maxAbs) * 118, height: 8, fill: x.change < 0 ? "#2e7d32" : "#c0392b" }));
    return [x.parameter.replace(/_/g, " "), x.setting ? x.setting.replace(/_/g, " ") : "×" + x.factor.toFixed(2), fmtS(x.step_s), (x.change >= 0 ? "+" : "") + fmtPct(x.change, 2), bar];
  });
  return section("Sensitivities (re-simulated)", el("div", { class: "panel", id: "sensitivities" },
    table(["parameter", { label: "scale or setting", num: true }, { label: "step", num: true }, { label: "change", num: true }, "faster ← → slower"], rows)));
}

function busiestLinks() {
  const links = S.communication.busiest_links;
  if (!links.length) return section("Busiest links", el("p", { class: "sub", text: "No traffic crossed a link." }));
  return section("Busiest links", el("div", { class: "panel", id: "links" }, table(["link", "tier", { label: "bytes", num: true }, { label: "busy", num: true }, "utilization"],
    links.map((l) => [l.name, l.tier, fmtBytes(l.bytes), fmtS(l.busy_s), el("span", {}, meter(l.utilization), " " + fmtPct(l.utilization))]))));
}

function render() {
  const app = document.getElementById("app");
  app.append(header(), headline());
  const spread = distribution();
  if (spread) app.append(spread);
  app.append(stepSplit(),
    section("The three walls", el("div", { class: "walls" }, memoryWall(), commWall(), computeWall())), kernelFamilies());
  app.append(section("Timeline (representative ranks)", timelineView(TL)));
  app.append(section("Memory over time per stage", memoryChart(TL, S.memory)));
  app.append(sensitivities(), busiestLinks());
  if (S.notes && S.notes.length) app.append(section("Notes", el("ul", {}, S.notes.map((n) => el("li", { text: n })))));
}

render();
document.body.dataset.ok = "1";
