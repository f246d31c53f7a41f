// The GGUF explorer: a dropped file parsed here (gguf.js), or a model on the
// server parsed there (POST /explore/open, the same shape); the model card,
// the tensor map and table, the metadata, and — for server models — exact
// weight previews, the vocabulary and the live view.
import { el, fmtBytes, fmtCount, getJSON, postJSON, showPiece } from "./common.js";
import { GGUFError, modelCard, parseFile, PREVIEW, readArrayPage, tensorPlace } from "./gguf.js";

const $ = id => document.getElementById(id);
const state = { source: null, file: null, model: null, front: null, card: null, sort: { key: "offset", dir: 1 }, selected: null, live: null };
const api = { lastOpenMs: null };
window.kilnExplorer = api;  // for the browser tests and the curious

const TYPE_COLORS = {
  F32: "#4e79a7", F16: "#76b7b2", BF16: "#59a14f", Q8_0: "#edc948", Q4_0: "#f28e2b", Q4_1: "#ff9d9a", Q5_0: "#b07aa1",
  Q5_1: "#9c755f", Q2_K: "#e15759", Q3_K: "#d37295", Q4_K: "#17becf", Q5_K: "#a0cbe8", Q6_K: "#8cd17d", Q8_K: "#bab0ac",
};
const colorOf = t => TYPE_COLORS[t] || "#" + ((Math.abs([...t].reduce((h, c) => h * 31 + c.charCodeAt(0), 7)) % 0xaaaaaa) + 0x333333).toString(16).slice(0, 6);

function status(text, isError) {
  $("open-status").textContent = text;
  $("open-status").classList.toggle("error-text", !!isError);
}

// ---------- opening ----------

async function openFile(file) {
  status(`Reading the front of ${file.name}…`);
  const t0 = performance.now();
  try {
    const front = await parseFile(file);
    const ms = performance.now() - t0;
    api.lastOpenMs = ms;
    Object.assign(state, { source: "file", file, model: null });
    show(front);
    status(`${file.name}: parsed in ${ms.toFixed(1)} ms from the first ${fmtBytes(front.prefix_bytes)} of ${fmtBytes(file.size)} (front ${fmtBytes(front.data_offset)}); nothing was uploaded.`);
  } catch (e) {
    api.lastOpenMs = null;
    status(`${file.name}: ${e instanceof GGUFError ? "" : "cannot read: "}${e.message}`, true);
    api.error = e.message;
  }
}

async function openServer(name) {
  status(`Opening ${name} on the server…`);
  const t0 = performance.now();
  try {
    const front = await postJSON("/explore/open", { model: name });
    const ms = performance.now() - t0;
    api.lastOpenMs = ms;
    Object.assign(state, { source: "server", file: null, model: front.model });
    show(front);
    status(`${front.model} (${front.file}): parsed on the server in ${ms.toFixed(1)} ms.`);
  } catch (e) {
    status(e.message, true);
    api.error = e.message;
  }
}

function show(front) {
  state.front = front;
  state.card = modelCard(front);
  state.selected = null;
  api.front = front;
  api.card = state.card;
  api.preview = null;
  $("model-view").hidden = false;
  renderCard();
  renderMap();
  renderTensors();
  renderMetadata();
  renderPreviewPlaceholder();
  renderVocab();
  renderLive();
}

// ---------- model card ----------

function renderCard() {
  const c = state.card;
  const arr = a => !a.length ? "-" : a.every(x => x === a[0]) ? String(a[0]) : `${Math.min(...a)}–${Math.max(...a)} (per layer)`;
  $("card-title").textContent = (c.name || state.front.file || "Model") + (c.size_label ? ` · ${c.size_label}` : "");
  const mix = Object.entries(c.type_mix).sort((a, b) => b[1].bytes - a[1].bytes)
    .map(([t, u]) => `${t} ×${u.tensors} (${fmtBytes(u.bytes)})`).join(", ");
  const rows = [
    ["architecture", "Architecture", c.architecture || "-"],
    ["n_params", "Parameters", `${fmtCount(c.n_params)} (${c.n_params})`],
    ["n_layer", "Layers", c.n_layer ?? "-"],
    ["n_embd", "Width", c.n_embd ?? "-"],
    ["heads", "Heads / KV heads", `${arr(c.n_head)} / ${arr(c.n_head_kv)}`],
    ["head_dim", "Head size (k / v)", `${c.head_dim_k ?? "-"} / ${c.head_dim_v ?? "-"}`],
    ["n_ff", "FFN width", arr(c.n_ff)],
    ["n_ctx_train", "Context", c.n_ctx_train ?? "-"],
    ["rope", "RoPE base", c.rope.freq_base ?? "-"],
    ["sliding_window", "Sliding window", c.sliding_window ?? "-"],
    ["experts", "Experts (used)", c.n_expert ? `${c.n_expert} (${c.n_expert_used ?? "-"})` : "-"],
    ["n_vocab", "Vocabulary", c.tokenizer.n_vocab],
    ["tokenizer", "Tokenizer", (c.tokenizer.model || "-") + (c.tokenizer.pre ? " / " + c.tokenizer.pre : "")],
    ["file_size", "File size", fmtBytes(c.file_size)],
    ["file_type", "File type", c.file_type || "-"],
    ["n_tensors", "Tensors", c.n_tensors],
    ["bpw", "Bits per weight", c.bits_per_weight.toFixed(3)],
    ["type_mix", "Quantization mix", mix || "-"],
  ];
  $("card").replaceChildren(...rows.map(([k, label, v]) =>
    el("div", { class: "card" + (k === "type_mix" ? " wide" : ""), dataset: { k } }, el("div", { class: "k", text: label }), el("div", { class: "v", text: String(v) }))));
}

// ---------- tensor map ----------

// Squarified treemap (Bruls, Huizing, van Wijk): items {value} laid out in the
// rectangle with areas proportional to their values and aspect ratios near 1.
// With sorted false the items keep their order (the layers stay in sequence),
// at some cost in aspect ratio.
function squarify(items, x, y, w, h, sorted = true) {
  const total = items.reduce((a, i) => a + i.value, 0) || 1;
  const scale = (w * h) / total;
  const list = items.map(i => ({ item: i, area: Math.max(i.value * scale, 0) }));
  if (sorted) list.sort((a, b) => b.area - a.area);
  const out = [];
  const worst = (row, side) => {
    const s = row.reduce((a, r) => a + r.area, 0);
    let max = 0, min = Infinity;
    for (const r of row) { max = Math.max(max, r.area); min = Math.min(min, r.area); }
    min = min || 1e-9;
    return Math.max(side * side * max / (s * s), (s * s) / (side * side * min));
  };
  const place = row => {
    const s = row.reduce((a, r) => a + r.area, 0);
    if (w >= h) {
      const cw = h ? s / h : 0;
      let yy = y;
      for (const r of row) { const rh = cw ? r.area / cw : 0; out.push({ item: r.item, x, y: yy, w: cw, h: rh }); yy += rh; }
      x += cw; w -= cw;
    } else {
      const rh = w ? s / w : 0;
      let xx = x;
      for (const r of row) { const rw = rh ? r.area / rh : 0; out.push({ item: r.item, x: xx, y, w: rw, h: rh }); xx += rw; }
      y += rh; h -= rh;
    }
  };
  let row = [];
  for (let i = 0; i < list.length;) {
    const side = Math.min(w, h);
    const cand = row.concat([list[i]]);
    if (!row.length || worst(cand, side) <= worst(row, side)) { row = cand; i++; }
    else { place(row); row = []; }
  }
  if (row.length) place(row);
  return out;
}

// Every tensor as a box: grouped by layer (non-layer tensors in their own
// group), area by bytes over one scale, colour by type.
function renderMap() {
  const groups = new Map();
  for (const t of state.front.tensors) {
    const p = tensorPlace(t.name);
    const k = p.layer === null ? "other" : "layer " + p.layer;
    if (!groups.has(k)) groups.set(k, { label: k, layer: p.layer ?? -1, value: 0, tensors: [] });
    const g = groups.get(k);
    g.tensors.push({ value: Math.max(t.bytes, 1), t, role: p.role });
    g.value += Math.max(t.bytes, 1);
  }
  const map = $("map");
  map.replaceChildren();
  const W = map.clientWidth || 1000, H = Math.max(260, Math.min(520, Math.round(W * 0.42)));
  map.style.height = H + "px";
  const ordered = [...groups.values()].sort((a, b) => a.layer - b.layer);  // "other" first, then the layers in order
  for (const g of squarify(ordered, 0, 0, W, H, false)) {
    const box = el("div", { class: "map-group", style: `left: ${g.x}px; top: ${g.y}px; width: ${g.w}px; height: ${g.h}px`,
                            title: `${g.item.label}: ${fmtBytes(g.item.value)}` });
    const labelH = g.h > 34 && g.w > 40 ? 13 : 0;
    if (labelH) box.append(el("div", { class: "map-label", text: g.item.label }));
    for (const c of squarify(g.item.tensors, 1, labelH + 1, Math.max(0, g.w - 2), Math.max(0, g.h - labelH - 2))) {
      const t = c.item.t;
      box.append(el("div", { class: "map-cell", dataset: { name: t.name },
                             style: `left: ${c.x}px; top: ${c.y}px; width: ${c.w}px; height: ${c.h}px; background: ${colorOf(t.type)}`,
                             title: `${t.name} · ${c.item.role} · ${t.type} · [${t.shape.join(", ")}] · ${fmtBytes(t.bytes)}` }));
    }
    map.append(box);
  }
  map.onmouseover = e => {
    const c = e.target.closest(".map-cell");
    if (c) $("map-tip").textContent = c.title;
  };
  map.onclick = e => {
    const c = e.target.closest(".map-cell");
    if (c) selectTensor(c.dataset.name);
  };
  const types = Object.keys(state.card.type_mix);
  $("legend").replaceChildren(...types.map(t => el("span", { style: `--c: ${colorOf(t)}`, text: `${t} (${fmtBytes(state.card.type_mix[t].bytes)})` })));
}

// ---------- tensor table ----------

function renderTensors() {
  const q = $("tensor-filter").value.trim().toLowerCase();
  const { key, dir } = state.sort;
  const val = t => key === "shape" ? t.shape.reduce((a, b) => a * b, 1) : key === "elements" ? t.shape.reduce((a, b) => a * b, 1) : t[key];
  const list = state.front.tensors.filter(t => !q || t.name.toLowerCase().includes(q) || t.type.toLowerCase() === q)
    .slice().sort((a, b) => {
      const x = val(a), y = val(b);
      return (typeof x === "string" ? x.localeCompare(y, undefined, { numeric: true }) : x - y) * dir;
    });
  $("tensor-count").textContent = `${list.length} of ${state.front.tensors.length}`;
  const body = $("tensors").tBodies[0];
  body.replaceChildren(...list.map(t => el("tr", { dataset: { name: t.name }, class: t.name === state.selected ? "selected" : "", tabindex: 0 },
    el("td", { class: "mono", text: t.name }), el("td", { text: t.type }), el("td", { class: "mono", text: `[${t.shape.join(", ")}]` }),
    el("td", { class: "num", text: t.shape.reduce((a, b) => a * b, 1).toLocaleString("en") }),
    el("td", { class: "num", text: fmtBytes(t.bytes) }), el("td", { class: "num", text: t.offset.toLocaleString("en") }))));
  for (const th of $("tensors").tHead.rows[0].cells)
    th.textContent = th.dataset.key + (th.dataset.key === key ? (dir > 0 ? " ▲" : " ▼") : "");
}

// ---------- weight preview ----------

function renderPreviewPlaceholder() {
  $("preview-name").textContent = "";
  $("preview").replaceChildren(el("p", { class: "muted", text: "Choose a tensor in the table or the map." }));
}

function serverTwin() {
  // A server model with the dropped file's name: its values can be shown.
  return (api.serverModels || []).find(m => state.file && m.file === state.file.name);
}

async function selectTensor(name) {
  state.selected = name;
  renderTensors();
  document.querySelectorAll(".map-cell.selected").forEach(c => c.classList.remove("selected"));
  const cell = document.querySelector(`.map-cell[data-name="${CSS.escape(name)}"]`);
  if (cell) cell.classList.add("selected");
  $("preview-name").textContent = name;
  const t = state.front.tensors.find(x => x.name === name);
  if (state.source !== "server") {
    const twin = serverTwin();
    $("preview").replaceChildren(
      el("p", { text: "Weight values are computed by the server, with kiln's own dequantization (bit-identical to kiln dequant, for every type); " +
                      "this page does not dequantize in the browser. Open the model on the server to see them." }),
      twin ? el("button", { type: "button", class: "primary", text: `Open ${twin.name} on the server`, onclick: async () => { await openServer(twin.name); selectTensor(name); } })
           : el("p", { class: "muted", text: "The server does not list a model with this file name." }));
    return;
  }
  await loadPreview(t, { offset: 0, row: 0, col: 0 });
}

async function loadPreview(t, { offset, row, col }) {
  const box = $("preview");
  box.replaceChildren(el("p", { class: "muted", text: `Dequantizing ${t.name} (${t.type}, ${fmtBytes(t.bytes)}) on the server…` }));
  let r;
  try {
    r = await postJSON("/explore/tensor", { model: state.model, tensor: t.name, offset, count: 256, row, col, rows: 64, cols: 64, bins: 64 });
  } catch (e) {
    box.replaceChildren(el("p", { class: "error-text", text: e.message }));
    return;
  }
  api.preview = r;
  const st = r.stats;
  const f = x => x === null || x === undefined ? "-" : Number(x).toPrecision(6);
  const stats = el("div", { class: "cards" }, ...[["min", f(st.min)], ["max", f(st.max)], ["mean", f(st.mean)], ["std", f(st.std)],
    ["elements", st.n.toLocaleString("en")], ["not finite", st.nonfinite]].map(([k, v]) =>
      el("div", { class: "card", dataset: { k } }, el("div", { class: "k", text: k }), el("div", { class: "v", text: v }))));
  const hist = el("canvas", { width: 512, height: 120, "aria-label": "Histogram" });
  drawHistogram(hist, r.histogram);
  const heat = el("canvas", { width: 256, height: 256, "aria-label": "Heat-map" });
  drawHeat(heat, r.slice.values);
  const offIn = el("input", { type: "number", min: 0, value: offset, "aria-label": "First element", size: 10 });
  const rowIn = el("input", { type: "number", min: 0, value: row, "aria-label": "First row" });
  const colIn = el("input", { type: "number", min: 0, value: col, "aria-label": "First column" });
  const go = () => loadPreview(t, { offset: +offIn.value || 0, row: +rowIn.value || 0, col: +colIn.value || 0 });
  const values = el("div", { class: "values" }, ...r.values.map((v, i) =>
    el("span", { title: `element ${offset + i}: ${v === null ? "not finite" : v}`, text: v === null ? "NaN" : g9(v) })));
  box.replaceChildren(
    el("p", { class: "muted small", text: `${r.type} [${r.shape.join(", ")}]: exact values (kiln's dequantization on the server, as kiln dequant prints them).` }),
    stats,
    el("div", { class: "split" },
      el("div", {}, el("h3", { text: `Histogram (${r.histogram.counts.length} bins, ${f(r.histogram.min)} to ${f(r.histogram.max)})` }), hist),
      el("div", {}, el("h3", { text: `Heat-map: rows ${r.slice.row}–${r.slice.row + r.slice.values.length - 1}, columns ${r.slice.col}–${r.slice.col + ((r.slice.values[0] || []).length) - 1}` }), heat)),
    el("h3", { text: `Values ${offset}–${offset + r.values.length - 1}` }), values,
    el("div", { class: "row" }, el("label", {}, "from element ", offIn), el("label", {}, "heat-map row ", rowIn), el("label", {}, "column ", colIn),
       el("button", { type: "button", text: "Show", onclick: go })));
}

// As C's %.9g (what kiln dequant prints; nine significant digits name a float32
// exactly), including its rounding of exact ties to even, which toPrecision does not do.
function g9(v) {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  // The exact decimal expansion (a float32 has at most ~112 significant digits; its
  // first 101 are enough to see a tie at the ninth).
  const [m, x] = Math.abs(v).toExponential(100).split("e");
  const digits = m.replace(".", "");
  let exp = Number(x);
  let head = digits.slice(0, 9);
  const rest = digits.slice(9);
  const up = rest[0] > "5" || (rest[0] === "5" && (/[1-9]/.test(rest.slice(1)) || Number(head[8]) % 2 === 1));
  if (up) {
    const n = (BigInt(head) + 1n).toString();
    if (n.length > 9) { head = n.slice(0, 9); exp += 1; } else head = n;
  }
  const sign = v < 0 ? "-" : "";
  if (exp < -4 || exp >= 9) {
    const frac = head.slice(1).replace(/0+$/, "");
    return sign + head[0] + (frac ? "." + frac : "") + "e" + (exp < 0 ? "-" : "+") + String(Math.abs(exp)).padStart(2, "0");
  }
  let t;
  if (exp >= 0) t = head.slice(0, exp + 1) + "." + head.slice(exp + 1);
  else t = "0." + "0".repeat(-exp - 1) + head;
  t = t.replace(/0+$/, "").replace(/\.$/, "");
  return sign + t;
}

function drawHistogram(canvas, h) {
  const g = canvas.getContext("2d");
  const max = Math.max(...h.counts, 1);
  const w = canvas.width / h.counts.length;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = getComputedStyle(document.body).getPropertyValue("--accent") || "#b4532a";
  // Square root scale: the tails of a weight distribution stay visible.
  h.counts.forEach((c, i) => {
    const y = Math.sqrt(c / max) * (canvas.height - 2);
    g.fillRect(i * w, canvas.height - y, Math.max(1, w - 1), y);
  });
}

function drawHeat(canvas, rows) {
  const g = canvas.getContext("2d");
  const h = rows.length, w = h ? rows[0].length : 0;
  if (!w) return;
  let m = 0;
  for (const r of rows) for (const v of r) if (Number.isFinite(v)) m = Math.max(m, Math.abs(v));
  const img = g.createImageData(w, h);
  rows.forEach((r, y) => r.forEach((v, x) => {
    const t = m ? Math.max(-1, Math.min(1, (v ?? 0) / m)) : 0;
    const i = (y * w + x) * 4;
    // Diverging: blue for negative, red for positive, white at zero.
    img.data[i] = t > 0 ? 255 : Math.round(255 * (1 + t));
    img.data[i + 1] = Math.round(255 * (1 - Math.abs(t)));
    img.data[i + 2] = t < 0 ? 255 : Math.round(255 * (1 - t));
    img.data[i + 3] = 255;
  }));
  const tmp = document.createElement("canvas");
  tmp.width = w; tmp.height = h;
  tmp.getContext("2d").putImageData(img, 0, 0);
  g.imageSmoothingEnabled = false;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.drawImage(tmp, 0, 0, canvas.width, canvas.height);
}

// ---------- metadata ----------

function valueText(v) {
  if (typeof v === "string") return JSON.stringify(v);
  return String(v);
}

function renderMetadata() {
  const q = $("metadata-filter").value.trim().toLowerCase();
  const list = state.front.metadata.filter(e => !q || e.key.toLowerCase().includes(q));
  $("metadata-count").textContent = `${list.length} of ${state.front.metadata.length} keys`;
  $("metadata").tBodies[0].replaceChildren(...list.map(e => el("tr", { dataset: { key: e.key } },
    el("td", { class: "mono", text: e.key }),
    el("td", { text: e.type === "array" ? `${e.elem_type}[${e.count}]` : e.type }),
    el("td", { class: "mono" }, e.type === "array" ? arrayCell(e) : scalarCell(e)))));
}

function scalarCell(e) {
  const text = valueText(e.value);
  if (text.length <= 300) return text;
  return el("details", {}, el("summary", { text: text.slice(0, 120) + `… (${text.length} characters)` }), el("pre", { class: "mono", text: e.value }));
}

// An array: its first values, then pages of 100 read on demand (from the file,
// or from the server for a server model).
function arrayCell(e) {
  const box = el("div", {});
  const list = el("div", { class: "tokens" });
  let shown = 0;
  const add = values => {
    values.forEach((v, i) => list.append(el("span", { class: "tok", title: `[${shown + i}]`, text: typeof v === "string" ? showPiece(v) : String(v) })));
    shown += values.length;
    more.hidden = shown >= e.count;
    more.textContent = `Show ${Math.min(100, e.count - shown)} more (${shown} of ${e.count})`;
  };
  const more = el("button", { type: "button", class: "small", onclick: async () => {
    more.disabled = true;
    try {
      const page = state.source === "file" ? await readArrayPage(state.file, e, shown, 100)
                                            : (await postJSON("/explore/array", { model: state.model, key: e.key, offset: shown, count: 100 })).values;
      add(page);
    } catch (err) {
      box.append(el("div", { class: "error-text", text: err.message }));
    }
    more.disabled = false;
  } });
  box.append(list, more);
  add(e.values.slice(0, Math.min(e.values.length, PREVIEW)));  // (numeric arrays may have come whole: the rest by pages too)
  return box;
}

// ---------- vocabulary (server models) ----------

function needsServer(container, what) {
  const twin = serverTwin();
  container.replaceChildren(el("p", { class: "muted", text: `${what} needs the model on the server.` }),
    twin ? el("button", { type: "button", text: `Open ${twin.name} on the server`, onclick: () => openServer(twin.name) }) : "");
}

function renderVocab() {
  const box = $("vocab-body");
  if (state.source !== "server") return needsServer(box, "The vocabulary search");
  const input = el("input", { type: "search", id: "vocab-query", placeholder: "text, or #id", "aria-label": "Search tokens" });
  const results = el("div", { id: "vocab-results" });
  const neighbors = el("div", { id: "vocab-neighbors" });
  const search = async () => {
    const q = input.value;
    if (!q) return;
    try {
      const body = /^#\d+$/.test(q.trim()) ? { model: state.model, id: +q.trim().slice(1) } : { model: state.model, find: q, limit: 100 };
      const r = await postJSON("/explore/vocab", body);
      api.vocab = r;
      results.replaceChildren(tokenTable(r.tokens, false, t => showNeighbors(t.id)));
    } catch (e) { results.replaceChildren(el("p", { class: "error-text", text: e.message })); }
  };
  const showNeighbors = async id => {
    neighbors.replaceChildren(el("p", { class: "muted", text: `Nearest neighbours of token ${id}…` }));
    try {
      const r = await postJSON("/explore/vocab", { model: state.model, neighbors: id, k: 20 });
      api.neighbors = r;
      neighbors.replaceChildren(el("h3", { text: `Nearest to ${id} '${showPiece(r.token.piece)}' (cosine of token_embd rows)` }),
                                tokenTable(r.tokens, true, t => showNeighbors(t.id)));
    } catch (e) { neighbors.replaceChildren(el("p", { class: "error-text", text: e.message })); }
  };
  input.addEventListener("keydown", e => { if (e.key === "Enter") search(); });
  box.replaceChildren(el("div", { class: "row" }, input, el("button", { type: "button", text: "Search", onclick: search })),
                      el("div", { class: "split" }, results, neighbors));
}

function tokenTable(tokens, withSim, onPick) {
  if (!tokens.length) return el("p", { class: "muted", text: "No tokens." });
  return el("div", { class: "scroll" }, el("table", { class: "data" },
    el("thead", {}, el("tr", {}, el("th", { class: "num", text: "id" }), el("th", { text: "piece" }), withSim ? el("th", { class: "num", text: "similarity" }) : "", el("th", {}))),
    el("tbody", {}, ...tokens.map(t => el("tr", {},
      el("td", { class: "num", text: t.id }), el("td", { class: "mono", text: showPiece(t.piece) }),
      withSim ? el("td", { class: "num", text: t.similarity.toFixed(4) }) : "",
      el("td", {}, el("button", { type: "button", class: "small", text: "neighbours", onclick: () => onPick(t) })))))));
}

// ---------- live view (server models) ----------

function renderLive() {
  const box = $("live-body");
  if (state.live) postJSON("/explore/live/close", { session: state.live.session }).catch(() => {});
  state.live = null;
  api.live = null;
  if (state.source !== "server") return needsServer(box, "The live view");
  const prompt = el("input", { type: "text", id: "live-prompt", value: "The capital of France is", size: 50, "aria-label": "Prompt" });
  const topk = el("input", { type: "number", id: "live-topk", value: 8, min: 1, max: 100, "aria-label": "Candidates" });
  const layers = el("input", { type: "checkbox", id: "live-layers", checked: true });
  const attention = el("input", { type: "checkbox", id: "live-attention", checked: true });
  const out = el("div", { id: "live-out" });
  const start = el("button", { type: "button", class: "primary", id: "live-start", text: "Start" });
  const step = el("button", { type: "button", id: "live-step", text: "Step", disabled: true });
  const step10 = el("button", { type: "button", id: "live-step10", text: "10 steps", disabled: true });
  const busy = on => { start.disabled = on; step.disabled = on || !state.live; step10.disabled = on || !state.live; };
  start.onclick = async () => {
    busy(true);
    try {
      if (state.live) await postJSON("/explore/live/close", { session: state.live.session }).catch(() => {});
      const r = await postJSON("/explore/live/start", { model: state.model, prompt: prompt.value, top_k: +topk.value || 8,
                                                        layers: layers.checked, attention: attention.checked });
      state.live = { session: r.session, tokens: r.prompt_tokens.map(t => ({ ...t, gen: false })), steps: [r] };
      api.live = state.live;
      drawLive(out);
    } catch (e) { out.replaceChildren(el("p", { class: "error-text", text: e.message })); }
    busy(false);
  };
  const advance = async token => {
    const r = await postJSON("/explore/live/step", { session: state.live.session, token });
    state.live.tokens.push({ ...r.token, gen: true });
    state.live.steps.push(r);
    drawLive(out);
    return r;
  };
  const greedy = async n => {
    busy(true);
    try {
      for (let i = 0; i < n; i++) {
        const last = state.live.steps[state.live.steps.length - 1];
        if (last.n_past >= last.n_ctx) break;
        const r = await advance(last.candidates[0].id);
        if (r.is_end) break;
      }
    } catch (e) { out.append(el("p", { class: "error-text", text: e.message })); }
    busy(false);
  };
  step.onclick = () => greedy(1);
  step10.onclick = () => greedy(10);
  out.addEventListener("click", async e => {
    const c = e.target.closest("tr[data-token]");
    if (!c || !state.live) return;
    busy(true);
    try { await advance(+c.dataset.token); } catch (err) { out.append(el("p", { class: "error-text", text: err.message })); }
    busy(false);
  });
  box.replaceChildren(
    el("p", { class: "muted small", text: "Steps one sequence token by token on the server (its own context). Statistics are computed only when asked: " +
                                          "the residual stream after each layer and each head's attention for the newest token." }),
    el("div", { class: "row" }, prompt, el("label", {}, "candidates ", topk), el("label", {}, layers, " layer statistics"),
       el("label", {}, attention, " attention statistics"), start, step, step10),
    out);
}

function drawLive(out) {
  const L = state.live;
  const s = L.steps[L.steps.length - 1];
  const tokens = el("div", { class: "tokens", id: "live-tokens" }, ...L.tokens.map((t, i) =>
    el("span", { class: "tok" + (t.gen ? " gen" : ""), dataset: { pos: i }, title: `position ${i}, token ${t.id}`, text: showPiece(t.piece) })));
  const cands = el("table", { class: "data", id: "live-candidates" },
    el("thead", {}, el("tr", {}, el("th", { text: "next token" }), el("th", { class: "num", text: "id" }), el("th", { class: "num", text: "prob" }),
                    el("th", { class: "num", text: "logit" }), el("th", { text: "" }))),
    el("tbody", {}, ...s.candidates.map(c => el("tr", { dataset: { token: c.id }, title: "append this token", style: "cursor: pointer" },
      el("td", { class: "mono", text: showPiece(c.piece) }), el("td", { class: "num", text: c.id }),
      el("td", { class: "num", text: (100 * c.prob).toFixed(2) + "%" }), el("td", { class: "num", text: c.logit.toFixed(3) }),
      el("td", { style: "width: 30%" }, el("div", { class: "bar", style: `width: ${100 * c.prob}%` }))))));
  const kv = el("p", { id: "live-kv", text: `KV cache: ${s.n_past} of ${s.n_ctx} positions used` +
    (new Set(s.kv_visible).size > 1 ? `; the newest token's attention reads ${Math.min(...s.kv_visible)}–${Math.max(...s.kv_visible)} of them (sliding layers see fewer)` : "") +
    ` · step took ${s.ms.toFixed(1)} ms` });
  const parts = [tokens, kv, el("div", { class: "split" }, el("div", {}, el("h3", { text: "Next token" }), cands), layerTable(s))];
  if (s.attention) parts.push(attentionGrid(s, L.tokens));
  out.replaceChildren(...parts);
}

function layerTable(s) {
  if (!s.layers) return el("div", { class: "muted", text: "Layer statistics off." });
  const maxNorm = Math.max(...s.layers.map(l => l.norm), 1e-30);
  const f = x => Math.abs(x) >= 1000 || (Math.abs(x) < 0.01 && x !== 0) ? x.toExponential(2) : x.toFixed(3);
  return el("div", {}, el("h3", { text: "Residual stream after each layer (newest token)" }),
    el("div", { class: "scroll" }, el("table", { class: "data", id: "live-layers-table" },
      el("thead", {}, el("tr", {}, ...["layer", "norm", "", "mean", "std", "min", "max"].map(h => el("th", { class: h && h !== "layer" ? "num" : "", text: h })))),
      el("tbody", {}, ...s.layers.map((l, i) => el("tr", {}, el("td", { text: i }), el("td", { class: "num", text: f(l.norm) }),
        el("td", { style: "width: 25%" }, el("div", { class: "bar", style: `width: ${100 * l.norm / maxNorm}%` })),
        el("td", { class: "num", text: f(l.mean) }), el("td", { class: "num", text: f(l.std) }),
        el("td", { class: "num", text: f(l.min) }), el("td", { class: "num", text: f(l.max) })))))));
}

// Layers x heads, shaded by entropy relative to the most a head could have
// (uniform over the positions it sees); hover names the positions it attends to most.
function attentionGrid(s, tokens) {
  const tip = el("div", { class: "tip mono", id: "live-attn-tip", text: "Hover a head: its entropy and most-attended positions." });
  const maxHeads = Math.max(...s.attention.map(h => h.length));
  const grid = el("div", { class: "heads", id: "live-attention", style: `grid-template-columns: 56px repeat(${maxHeads}, 1fr)` });
  s.attention.forEach((heads, l) => {
    grid.append(el("div", { class: "muted", text: "layer " + l }));
    const maxEnt = Math.log2(Math.max(2, s.kv_visible[l] || 2));
    heads.forEach((h, hi) => {
      const t = Math.min(1, h.entropy / maxEnt);
      const cell = el("div", { style: `background: hsl(20, 70%, ${25 + 65 * t}%)` });
      cell.onmouseenter = () => {
        tip.textContent = `layer ${l} head ${hi}: entropy ${h.entropy.toFixed(3)} bits; attends to ` +
          h.top.map(p => `${p.pos} '${showPiece((tokens[p.pos] || {}).piece || "?")}' ${(100 * p.weight).toFixed(1)}%`).join(", ");
        document.querySelectorAll(".tok.hl").forEach(x => x.classList.remove("hl"));
        for (const p of h.top) { const tk = document.querySelector(`#live-tokens .tok[data-pos="${p.pos}"]`); if (tk) tk.classList.add("hl"); }
      };
      grid.append(cell);
    });
  });
  return el("div", {}, el("h3", { text: "Attention heads (newest token): dark = focused, light = spread out" }), grid, tip);
}

// ---------- server models and the cache ----------

async function loadServerModels() {
  try {
    const r = await getJSON("/explore/models");
    api.serverModels = r.models;
    $("server-models").classList.remove("muted");
    $("server-models").replaceChildren(el("ul", {}, ...r.models.map(m => el("li", {},
      el("button", { type: "button", class: "small", text: "Open", dataset: { model: m.name }, onclick: () => openServer(m.name) }), " ",
      el("strong", { text: m.name }), el("span", { class: "muted small", text: ` ${fmtBytes(m.file_size)}${m.loaded ? " · loaded" : ""}${m.default ? " · default" : ""}` })))));
  } catch (e) {
    $("server-models").textContent = "Cannot list the server's models: " + e.message;
  }
}

async function loadCache() {
  try {
    const r = await getJSON("/explore/cache");
    api.cache = r;
    const rows = r.models.map(m => el("tr", { dataset: { model: m.name } },
      el("td", { text: m.name }), el("td", { text: m.architecture }), el("td", { class: "num", text: fmtBytes(m.file_bytes) }),
      el("td", { class: "num", text: fmtBytes(m.sequence_bytes) }), el("td", { class: "num", text: fmtBytes(m.bytes) }),
      el("td", {}, el("button", { type: "button", class: "small danger", text: "Unload", onclick: () => unload(m.name) }))));
    $("cache").classList.remove("muted");
    $("cache").replaceChildren(
      el("p", { class: "small muted", text: `${r.resident} resident${r.capacity ? " of at most " + r.capacity : ""} · ${fmtBytes(r.bytes)} · ${r.hits} hits, ${r.loads} loads, ${r.evictions} evictions` }),
      r.models.length ? el("table", { class: "data", id: "cache-table" },
        el("thead", {}, el("tr", {}, ...["model", "architecture", "file", "sequences", "total", ""].map(h => el("th", { text: h })))),
        el("tbody", {}, ...rows)) : el("p", { class: "muted", text: "No model is resident." }),
      el("button", { type: "button", class: "small", text: "Refresh", onclick: loadCache }));
  } catch (e) {
    $("cache").textContent = "Cannot read the model cache: " + e.message;
  }
}

async function unload(name) {
  try { await postJSON("/models/unload", { model: name }); } catch (e) { alertInCache(e.message); }
  loadCache();
  loadServerModels();
}
function alertInCache(msg) { $("cache").prepend(el("p", { class: "error-text", text: msg })); }

// ---------- wiring ----------

$("choose-file").addEventListener("click", () => $("file").click());
$("file").addEventListener("change", e => { if (e.target.files[0]) openFile(e.target.files[0]); });
const dz = $("dropzone");
dz.addEventListener("dragover", e => { e.preventDefault(); dz.classList.add("over"); });
dz.addEventListener("dragleave", () => dz.classList.remove("over"));
dz.addEventListener("drop", e => {
  e.preventDefault();
  dz.classList.remove("over");
  if (e.dataTransfer.files[0]) openFile(e.dataTransfer.files[0]);
});
document.addEventListener("dragover", e => e.preventDefault());
document.addEventListener("drop", e => { e.preventDefault(); if (e.dataTransfer.files[0]) openFile(e.dataTransfer.files[0]); });
$("tensor-filter").addEventListener("input", () => renderTensors());
$("metadata-filter").addEventListener("input", () => renderMetadata());
$("tensors").tHead.addEventListener("click", e => {
  const k = e.target.closest("th") && e.target.closest("th").dataset.key;
  if (!k) return;
  state.sort = { key: k, dir: state.sort.key === k ? -state.sort.dir : 1 };
  renderTensors();
});
$("tensors").tBodies[0].addEventListener("click", e => { const r = e.target.closest("tr"); if (r) selectTensor(r.dataset.name); });
$("tensors").tBodies[0].addEventListener("keydown", e => { if (e.key === "Enter") { const r = e.target.closest("tr"); if (r) selectTensor(r.dataset.name); } });
api.openServer = openServer;
api.selectTensor = selectTensor;
loadServerModels();
loadCache();
