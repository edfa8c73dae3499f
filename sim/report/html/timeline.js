// wallsim report.html: the zoomable timeline (canvas) and memory over time (SVG) of the
// representative ranks, from the embedded timeline.json (see sim/report/timeline.hpp).
"use strict";

// Rows of the timeline: one per (rank, stream) that has ops, each with its ops sorted by start.
function timelineRows(tl) {
  const rows = [];
  for (const rank of tl.ranks) {
    const byStream = new Map();
    for (let i = 0; i < rank.ops.length; i += 5) {
      const stream = rank.ops[i];
      if (!byStream.has(stream)) byStream.set(stream, []);
      byStream.get(stream).push(i);
    }
    for (const stream of [...byStream.keys()].sort((a, b) => a - b)) {
      const ops = byStream.get(stream).sort((a, b) => rank.ops[a + 2] - rank.ops[b + 2]);
      rows.push({ rank, stream, ops, label: `${rank.name} · ${tl.streams[stream] || "stream " + stream}` });
    }
  }
  return rows;
}

function timelineView(tl) {
  if (!tl || !tl.ranks || !tl.ranks.length) return el("p", { class: "sub", text: "No timeline in this report (timeline.json was not found)." });
  const rows = timelineRows(tl);
  const ROW = 16, LABEL = 210, AXIS = 22;
  const end = tl.step_s * 1e6;
  const view = { from: 0, to: end };
  const canvas = el("canvas", { id: "timeline" });
  const tip = el("div", { id: "tooltip" });
  const info = el("span", {});
  const reset = el("button", { type: "button", text: "Reset zoom" });
  const wrap = el("div", { id: "timeline-wrap" }, canvas, tip);
  const ctx = canvas.getContext("2d");
  const height = AXIS + rows.length * ROW + 4;

  function x(t, width) { return LABEL + ((t - view.from) / (view.to - view.from)) * (width - LABEL - 8); }
  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const width = Math.max(600, wrap.clientWidth || 1200);
    canvas.width = width * dpr; canvas.height = height * dpr; canvas.style.height = height + "px";
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = "11px system-ui, sans-serif";
    for (let k = 0; k <= 10; ++k) {
      const t = view.from + ((view.to - view.from) * k) / 10, px = x(t, width);
      ctx.fillStyle = "#eef0f3"; ctx.fillRect(px, AXIS - 4, 1, height - AXIS);
      ctx.fillStyle = "#616e7c"; ctx.fillText(fmtS(t / 1e6), Math.min(px + 2, width - 60), 12);
    }
    rows.forEach((row, r) => {
      const y = AXIS + r * ROW;
      ctx.fillStyle = r % 2 ? "#fafbfc" : "#fff"; ctx.fillRect(0, y, width, ROW);
      ctx.fillStyle = "#1f2933"; ctx.fillText(row.label, 4, y + 12, LABEL - 8);
      paintRow(row, y, width);
    });
    info.textContent = `${fmtS(view.from / 1e6)} – ${fmtS(view.to / 1e6)} · wheel to zoom, drag to pan, double-click to reset`;
  }
  // Each pixel column takes the colour of the category that was busy longest in it, so dense
  // stretches read as what dominates them rather than as whichever op was drawn last.
  function paintRow(row, y, width) {
    const ops = row.rank.ops, x0 = LABEL, x1 = width - 8, cols = Math.ceil(x1 - x0);
    const busy = new Map();
    const perPx = (view.to - view.from) / (x1 - x0);
    for (const i of row.ops) {
      const s = ops[i + 2], e = s + ops[i + 3];
      if (e < view.from || s > view.to) continue;
      const a = Math.max(0, Math.floor((s - view.from) / perPx)), b = Math.min(cols - 1, Math.floor((e - view.from) / perPx));
      for (let c = a; c <= b; ++c) {
        const lo = Math.max(s, view.from + c * perPx), hi = Math.min(e, view.from + (c + 1) * perPx);
        const key = c * 16 + ops[i + 1];
        busy.set(key, (busy.get(key) || 0) + Math.max(hi - lo, perPx * 1e-3));
      }
    }
    const best = new Map();
    for (const [key, t] of busy) {
      const c = Math.floor(key / 16), prev = best.get(c);
      if (!prev || t > prev.t) best.set(c, { t, category: key % 16 });
    }
    for (const [c, { category }] of best) {
      ctx.fillStyle = COLORS[tl.categories[category]] || "#999";
      ctx.fillRect(x0 + c, y + 2, 1, ROW - 4);
    }
  }
  function opAt(px, py) {
    const r = Math.floor((py - AXIS) / ROW);
    if (r < 0 || r >= rows.length || px < LABEL) return null;
    const width = wrap.clientWidth, t = view.from + ((px - LABEL) / (width - LABEL - 8)) * (view.to - view.from);
    const tol = (3 / (width - LABEL)) * (view.to - view.from);
    const row = rows[r], ops = row.rank.ops;
    for (const i of row.ops) if (ops[i + 2] - tol <= t && t <= ops[i + 2] + ops[i + 3] + tol) return { row, i };
    return null;
  }
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const width = wrap.clientWidth, f = e.deltaY > 0 ? 1.25 : 0.8;
    const t = view.from + ((e.offsetX - LABEL) / (width - LABEL - 8)) * (view.to - view.from);
    const span = Math.max(1, Math.min(end, (view.to - view.from) * f));
    view.from = Math.max(0, Math.min(end - span, t - ((t - view.from) * span) / (view.to - view.from)));
    view.to = view.from + span; draw();
  });
  let drag = null;
  canvas.addEventListener("mousedown", (e) => { drag = { x: e.clientX, from: view.from, to: view.to }; });
  window.addEventListener("mouseup", () => { drag = null; });
  canvas.addEventListener("mousemove", (e) => {
    if (drag) {
      const dt = ((drag.x - e.clientX) / (wrap.clientWidth - LABEL - 8)) * (drag.to - drag.from);
      const shift = Math.max(-drag.from, Math.min(end - drag.to, dt));
      view.from = drag.from + shift; view.to = drag.to + shift; draw(); return;
    }
    const hit = opAt(e.offsetX, e.offsetY);
    if (!hit) { tip.style.display = "none"; return; }
    const ops = hit.row.rank.ops;
    tip.textContent = `${hit.row.rank.labels[ops[hit.i + 4]]} · ${tl.categories[ops[hit.i + 1]]} · ${fmtS(ops[hit.i + 3] / 1e6)} at ${fmtS(ops[hit.i + 2] / 1e6)}`;
    tip.style.display = "block"; tip.style.left = Math.min(e.offsetX + 12, wrap.clientWidth - 320) + "px"; tip.style.top = e.offsetY + 14 + "px";
  });
  canvas.addEventListener("dblclick", () => { view.from = 0; view.to = end; draw(); });
  reset.addEventListener("click", () => { view.from = 0; view.to = end; draw(); });
  window.addEventListener("resize", draw);
  requestAnimationFrame(draw);
  draw();
  const categories = [...new Set(tl.ranks.flatMap((rank) => { const c = []; for (let i = 1; i < rank.ops.length; i += 5) c.push(tl.categories[rank.ops[i]]); return [...new Set(c)]; }))];
  return el("div", {}, el("div", { class: "toolbar" }, reset, info), legend(categories), wrap);
}

// The largest tensor classes of a stage at its analytical peak, e.g. "grads 23.0 GiB, ...".
function largestParts(stage) {
  const parts = ["weights", "grads", "optimizer", "activations", "unit_buffers", "wgrad_placeholders", "grad_transients", "buffers"].map((k) => [k, stage[k] || 0]);
  return parts.filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, v]) => `${k} ${fmtGiB(v)}`).join(", ");
}

// Memory per simulated rank over the step. The solid line is what the GPU holds (live tensors
// plus workspaces, the allocator's slack, CUDA context and NCCL buffers); the dashed line below
// it is PyTorch's allocated count and the dotted level its reserved peak (docs/reference/
// allocator.md), so the band between dashed and dotted is the caching allocator's slack.
function memoryChart(tl, memory) {
  const hbm = memory.hbm_bytes;
  if (!tl || !tl.ranks || !tl.ranks.length) return el("p", { class: "sub", text: "No memory samples in this report." });
  const W = 1200, H = 260, L = 56, B = 24;
  const end = tl.step_s * 1e6;
  let top = hbm / GiB;
  for (const rank of tl.ranks) for (let i = 1; i < rank.memory.length; i += 2) top = Math.max(top, rank.memory[i]);
  top *= 1.08;
  const px = (t) => L + (t / end) * (W - L - 10), py = (g) => H - B - (g / top) * (H - B - 8);
  const root = svg("svg", { width: "100%", viewBox: `0 0 ${W} ${H}`, id: "memory-chart" });
  for (let k = 0; k <= 4; ++k) {
    const g = (top * k) / 4;
    root.append(svg("line", { x1: L, x2: W - 10, y1: py(g), y2: py(g), class: "grid" }), svg("text", { x: L - 6, y: py(g) + 4, "text-anchor": "end", text: g.toFixed(0) + " GiB" }));
  }
  for (let k = 0; k <= 5; ++k) root.append(svg("text", { x: px((end * k) / 5), y: H - 6, "text-anchor": k === 5 ? "end" : "middle", text: fmtS((end * k) / 5 / 1e6) }));
  root.append(svg("line", { x1: L, x2: W - 10, y1: py(hbm / GiB), y2: py(hbm / GiB), stroke: "#c0392b", "stroke-dasharray": "6 4" }),
    svg("text", { x: W - 12, y: py(hbm / GiB) - 4, "text-anchor": "end", text: "HBM " + (hbm / GiB).toFixed(0) + " GiB" }));
  const palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"];
  const keys = [];
  const stages = memory.per_stage || [];
  tl.ranks.forEach((rank, r) => {
    const m = rank.memory;
    if (m.length < 2) return;
    const path = (shift) => {
      let d = `M${px(0).toFixed(1)},${py(m[1] - shift).toFixed(1)}`;
      for (let i = 0; i < m.length; i += 2) d += `H${px(m[i]).toFixed(1)}V${py(m[i + 1] - shift).toFixed(1)}`;
      return d + `H${px(end).toFixed(1)}`;
    };
    const color = palette[r % palette.length];
    root.append(svg("path", { d: path(0), fill: "none", stroke: color, "stroke-width": 1.5 }, svg("title", { text: rank.name + ": device memory" })));
    const stage = stages.find((s) => s.stage === rank.stage);
    let detail = "";
    if (stage && stage.allocated !== undefined) {
      // Device memory minus what is not allocated: the allocator's slack, context and NCCL.
      const notAllocated = (stage.peak - stage.allocated) / GiB;
      root.append(svg("path", { d: path(notAllocated), fill: "none", stroke: color, "stroke-width": 1, "stroke-dasharray": "5 3" }, svg("title", { text: rank.name + ": allocated" })),
        svg("line", { x1: L, x2: W - 10, y1: py(stage.reserved / GiB), y2: py(stage.reserved / GiB), stroke: color, "stroke-width": 1, "stroke-dasharray": "1 3" }, svg("title", { text: `${rank.name}: reserved peak ${fmtGiB(stage.reserved)}` })));
      detail = `; allocated ${fmtGiB(stage.allocated)}, reserved ${fmtGiB(stage.reserved)}; largest at the peak: ${largestParts(stage)}`;
    }
    keys.push(el("span", {}, el("i", { style: "background:" + color }), `stage ${rank.stage} (${rank.name})${detail}`));
  });
  const note = el("p", { class: "sub", text: "Solid: device memory; dashed: PyTorch's allocated; dotted: the reserved peak. The gap between dashed and dotted is the caching allocator's slack." });
  return el("div", { class: "panel" }, note, el("div", { class: "legend" }, keys), root);
}
