// Helpers shared by the chat page and the explorer: the API (with the key the
// user gave, if the server wants one), formatting, small DOM helpers.

const KEY_STORE = "kiln.apiKey";

export function apiKey() { return localStorage.getItem(KEY_STORE) || ""; }
export function setApiKey(k) { if (k) localStorage.setItem(KEY_STORE, k); else localStorage.removeItem(KEY_STORE); }

export function headers(extra = {}) {
  const h = { ...extra };
  const k = apiKey();
  if (k) h["Authorization"] = "Bearer " + k;
  return h;
}

// An error from the server: its message (every kiln error body has one) and status.
export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

async function errorOf(res) {
  let msg = `HTTP ${res.status}`;
  try {
    const j = await res.json();
    msg = (j.error && (j.error.message || j.error)) || msg;
  } catch { /* not JSON */ }
  if (res.status === 401) msg += " (set the API key in the settings)";
  return new ApiError(res.status, msg);
}

export async function getJSON(path) {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

export async function postJSON(path, body, signal) {
  const res = await fetch(path, {
    method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body), signal,
  });
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

// POST that answers with an SSE stream: calls onEvent(json) for each `data:` line
// (until [DONE]); returns when the stream ends.
export async function postSSE(path, body, signal, onEvent) {
  const res = await fetch(path, {
    method: "POST", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body), signal,
  });
  if (!res.ok) throw await errorOf(res);
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      if (!line.startsWith("data:")) continue;  // comments (keep-alive), event names, blank lines
      const data = line.slice(5).trim();
      if (data === "[DONE]") return;
      onEvent(JSON.parse(data));
    }
  }
}

export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

export function escapeHtml(s) {
  return String(s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "-";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n.toFixed(0) : n.toFixed(2)) + " " + u[i];
}

export function fmtCount(n) {
  if (n >= 1e9) return (n / 1e9).toFixed(2) + " B";
  if (n >= 1e6) return (n / 1e6).toFixed(1) + " M";
  if (n >= 1e3) return (n / 1e3).toFixed(1) + " K";
  return String(n);
}

// A loaded <script> (for the libraries loaded only when used); one load each.
const scripts = new Map();
export function loadScript(src) {
  if (!scripts.has(src)) {
    scripts.set(src, new Promise((resolve, reject) => {
      const s = el("script", { src });
      s.onload = resolve;
      s.onerror = () => reject(new Error("cannot load " + src));
      document.head.append(s);
    }));
  }
  return scripts.get(src);
}
export function loadCss(href) {
  if (!document.querySelector(`link[href="${href}"]`)) document.head.append(el("link", { rel: "stylesheet", href }));
}

// A token's text shown visibly: spaces, newlines and tabs as symbols.
export function showPiece(p) {
  return p.replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/ /g, "␣");
}
