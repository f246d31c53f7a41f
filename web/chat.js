// The chat page: conversations kept in this browser (localStorage), replies
// streamed from /v1/chat/completions and rendered as Markdown while they arrive.
import { ApiError, apiKey, el, getJSON, postJSON, postSSE, setApiKey } from "./common.js";
import { installCopyHandler, renderInto } from "./markdown.js";

const STORE = "kiln.conversations";
const SETTINGS = "kiln.settings";
const PASTE_ATTACH_CHARS = 2000;      // a paste longer than this becomes an attachment
const MAX_ATTACHMENT_BYTES = 1 << 20;

const $ = id => document.getElementById(id);
const ui = {
  thread: $("thread"), input: $("input"), send: $("send"), stop: $("stop"), attach: $("attach"),
  attachments: $("attachments"), notice: $("notice"), model: $("model"), modelStatus: $("model-status"),
  list: $("conversations"), search: $("search"), settings: $("settings"), sidebar: $("sidebar"),
};

let conversations = loadConversations();
let current = null;          // the conversation shown
let pending = [];            // attachments of the message being written: {name, text}
let running = null;          // {controller, conv} while a reply streams
let capabilities = {};       // per model: {thinking: bool}

// ---------- storage ----------

function loadConversations() {
  try {
    const v = JSON.parse(localStorage.getItem(STORE) || "[]");
    return Array.isArray(v) ? v : [];
  } catch { return []; }
}
function save() {
  try {
    localStorage.setItem(STORE, JSON.stringify(conversations));
  } catch (e) {
    notice("Could not save the conversations in this browser: " + e.message, true);
  }
}
const uid = () => Date.now().toString(36) + Math.random().toString(36).slice(2, 8);

function newConversation(model) {
  return { id: uid(), title: "New chat", created: Date.now(), updated: Date.now(), model: model || ui.model.value, messages: [] };
}

// ---------- settings ----------

const FIELDS = ["system", "temperature", "top_p", "top_k", "min_p", "max_tokens", "seed", "tools"];
function loadSettings() {
  let s = {};
  try { s = JSON.parse(localStorage.getItem(SETTINGS) || "{}"); } catch { /* defaults */ }
  for (const f of FIELDS) if (s[f] !== undefined) $(f).value = s[f];
  $("thinking").checked = s.thinking !== false;
  $("api-key").value = apiKey();
}
function saveSettings() {
  const s = { thinking: $("thinking").checked };
  for (const f of FIELDS) s[f] = $(f).value;
  localStorage.setItem(SETTINGS, JSON.stringify(s));
  setApiKey($("api-key").value.trim());
}

function requestOptions() {
  const body = {};
  for (const f of ["temperature", "top_p", "min_p"]) if ($(f).value !== "") body[f] = Number($(f).value);
  for (const f of ["top_k", "max_tokens", "seed"]) if ($(f).value !== "") body[f] = parseInt($(f).value, 10);
  const tools = $("tools").value.trim();
  if (tools) {
    let parsed;
    try { parsed = JSON.parse(tools); } catch (e) { throw new Error("Settings: the tools are not valid JSON: " + e.message); }
    if (!Array.isArray(parsed)) throw new Error("Settings: tools must be a JSON array of tool definitions");
    body.tools = parsed;
  }
  const caps = capabilities[current.model] || {};
  if (caps.thinking) body.chat_template_kwargs = { enable_thinking: $("thinking").checked };
  return body;
}

// ---------- models ----------

async function loadModels() {
  ui.model.disabled = true;
  try {
    const r = await getJSON("/v1/models");
    ui.model.innerHTML = "";
    for (const m of r.data) ui.model.append(el("option", { value: m.id, text: m.id + (m.meta && m.meta.loaded ? "" : " (not loaded)") }));
    ui.model.disabled = false;
    if (current && current.model && [...ui.model.options].some(o => o.value === current.model)) ui.model.value = current.model;
    else if (current) current.model = ui.model.value;
    modelCapabilities(ui.model.value);
  } catch (e) {
    ui.model.innerHTML = "";
    ui.model.append(el("option", { value: "", text: "no models" }));
    notice("Cannot list the models: " + e.message, true);
  }
}

async function modelCapabilities(name) {
  if (!name || capabilities[name]) return updateThinking();
  ui.modelStatus.textContent = "loading " + name + "…";
  try {
    const r = await postJSON("/api/show", { model: name });
    capabilities[name] = { thinking: (r.capabilities || []).includes("thinking"), tools: (r.capabilities || []).includes("tools") };
    ui.modelStatus.textContent = "";
  } catch (e) {
    capabilities[name] = {};
    ui.modelStatus.textContent = "";
    notice("Model " + name + ": " + e.message, true);
  }
  updateThinking();
}

function updateThinking() {
  const caps = (current && capabilities[current.model]) || {};
  $("thinking").disabled = !caps.thinking;
  $("thinking-note").textContent = caps.thinking ? "" : "(this model's template has no thinking switch)";
}

// ---------- conversation list ----------

function renderList() {
  const q = ui.search.value.trim().toLowerCase();
  ui.list.innerHTML = "";
  const shown = conversations
    .filter(c => !q || c.title.toLowerCase().includes(q) || c.messages.some(m => (m.content || "").toLowerCase().includes(q)))
    .sort((a, b) => b.updated - a.updated);
  for (const c of shown) {
    const title = el("button", { type: "button", class: "conv-title", text: c.title, title: c.title,
                                 onclick: () => { select(c.id); closeSidebarOnPhone(); } });
    const rename = el("button", { type: "button", class: "icon small", "aria-label": "Rename " + c.title, text: "✎",
                                  onclick: () => startRename(li, c) });
    const del = el("button", { type: "button", class: "icon small", "aria-label": "Delete " + c.title, text: "×",
                               onclick: () => {
                                 if (del.dataset.armed) return removeConversation(c.id);
                                 del.dataset.armed = "1"; del.textContent = "Delete?"; del.classList.add("danger");
                                 setTimeout(() => { delete del.dataset.armed; del.textContent = "×"; del.classList.remove("danger"); }, 3000);
                               } });
    const li = el("li", { class: c === current ? "active" : "", dataset: { id: c.id } }, title, rename, del);
    ui.list.append(li);
  }
}

function startRename(li, c) {
  const input = el("input", { type: "text", value: c.title, "aria-label": "New title" });
  li.replaceChildren(input);
  input.focus();
  input.select();
  let finished = false;  // Enter, then the blur of the removed input: once
  const done = ok => {
    if (finished) return;
    finished = true;
    if (ok && input.value.trim()) { c.title = input.value.trim(); save(); }
    renderList();
  };
  input.addEventListener("keydown", e => {
    if (e.key === "Enter") { e.preventDefault(); done(true); }
    if (e.key === "Escape") { e.preventDefault(); done(false); }
  });
  input.addEventListener("blur", () => done(true));
}

function removeConversation(id) {
  conversations = conversations.filter(c => c.id !== id);
  save();
  if (current && current.id === id) startNew();
  else renderList();
}

function select(id) {
  const c = conversations.find(x => x.id === id);
  if (!c) return;
  current = c;
  if ([...ui.model.options].some(o => o.value === c.model)) ui.model.value = c.model;
  renderThread();
  renderList();
  updateThinking();
  ui.input.focus();
}

function startNew() {
  current = newConversation();
  renderThread();
  renderList();
  ui.input.focus();
}

// The conversation is stored once it has a message.
function ensureStored(c) {
  if (!conversations.includes(c)) conversations.push(c);
}

// ---------- thread ----------

function renderThread() {
  ui.thread.innerHTML = "";
  if (!current.messages.length) {
    ui.thread.append(el("div", { class: "empty muted" },
      el("p", { text: "Start a conversation with " + (current.model || "the default model") + "." }),
      el("p", { class: "small", text: "Replies stream as Markdown with code highlighting and math. Attach text files with the Attach button or by pasting long text." })));
    return;
  }
  current.messages.forEach((m, i) => ui.thread.append(messageNode(m, i)));
  ui.thread.scrollTop = ui.thread.scrollHeight;
}

function messageNode(m, index) {
  const node = el("article", { class: "msg " + m.role, dataset: { index } });
  node.append(el("div", { class: "role", text: m.role === "user" ? "You" : m.role === "assistant" ? (m.model || "assistant") : m.role }));
  fillMessage(node, m, index);
  return node;
}

// (Re)draws a message's body: reasoning, text, tool calls, error, speed, actions.
function fillMessage(node, m, index) {
  node.querySelectorAll(".body, .reasoning, .tool-call, .error, .speed, .actions, .files").forEach(n => n.remove());
  if (m.attachments && m.attachments.length)
    node.append(el("div", { class: "files" }, m.attachments.map(a => el("span", { class: "chip", text: a.name }))));
  if (m.reasoning) {
    const streaming = m.streaming && !m.content;
    const det = el("details", { class: "reasoning", open: streaming || m.reasoningOpen },
      el("summary", { text: streaming ? "Thinking…" : "Reasoning" }), el("div", { class: "reasoning-body" }));
    det.addEventListener("toggle", () => { m.reasoningOpen = det.open; });
    renderInto(det.lastChild, m.reasoning, () => fillMessage(node, m, index));
    node.append(det);
  }
  if (m.role === "user") {
    node.append(el("div", { class: "body plain", text: m.content }));
  } else if (m.content || (!m.tool_calls && !m.error && !m.reasoning)) {
    const body = el("div", { class: "body markdown" });
    renderInto(body, m.content || (m.streaming ? "…" : ""), () => fillMessage(node, m, index));
    node.append(body);
  }
  for (const tc of m.tool_calls || []) {
    let args = tc.function.arguments || "";
    try { args = JSON.stringify(JSON.parse(args), null, 2); } catch { /* partial: as it is */ }
    node.append(el("div", { class: "tool-call", dataset: { name: tc.function.name || "" } },
      el("div", { class: "tool-head" }, el("span", { text: "Tool call" }), el("strong", { text: tc.function.name || "" }),
         el("span", { class: "muted small", text: tc.id || "" })),
      el("pre", {}, el("code", { text: args }))));
  }
  if (m.error) node.append(el("div", { class: "error", role: "alert", text: m.error }));
  if (m.timings) node.append(el("div", { class: "speed muted small", text: speedLine(m) }));
  if (!m.streaming) node.append(actions(m, index));
}

function speedLine(m) {
  const t = m.timings;
  const parts = [];
  if (t.prompt_n !== undefined) parts.push(`prompt ${t.prompt_n} tok` + (t.prompt_ms > 0 ? ` at ${(t.prompt_n / t.prompt_ms * 1000).toFixed(1)} tok/s` : ""));
  if (t.predicted_n !== undefined) parts.push(`generated ${t.predicted_n} tok` + (t.predicted_ms > 0 ? ` at ${(t.predicted_n / t.predicted_ms * 1000).toFixed(1)} tok/s` : ""));
  if (t.cache_n !== undefined) parts.push(`${t.cache_n} cached`);
  if (m.finish) parts.push(m.finish === "stop" ? "done" : m.finish);
  return parts.join(" · ");
}

function actions(m, index) {
  const last = index === current.messages.length - 1;
  const box = el("div", { class: "actions" });
  if (m.role === "user") {
    box.append(el("button", { type: "button", class: "small", text: "Edit", "aria-label": "Edit and branch", onclick: () => editMessage(index) }));
  } else if (m.role === "assistant") {
    box.append(el("button", { type: "button", class: "small", text: "Copy", onclick: e => copyText(m.content || "", e.target) }));
    if (last) {
      box.append(el("button", { type: "button", class: "small regenerate", text: "Regenerate", onclick: () => regenerate() }));
      box.append(el("button", { type: "button", class: "small continue", text: "Continue", title: "Let the model continue this reply", onclick: () => continueReply() }));
    }
  }
  return box;
}

async function copyText(text, button) {
  try { await navigator.clipboard.writeText(text); button.textContent = "Copied"; } catch { button.textContent = "Copy failed"; }
  setTimeout(() => { button.textContent = "Copy"; }, 1200);
}

// Editing a user turn branches: a new conversation with the turns before it
// and the edited text, so the original stays as it was.
function editMessage(index) {
  if (running) return;
  const m = current.messages[index];
  const node = ui.thread.querySelector(`article[data-index="${index}"]`);
  const box = el("textarea", { class: "edit", rows: 4, "aria-label": "Edited message" });
  box.value = m.content;
  const ok = el("button", { type: "button", class: "primary small", text: "Branch and send" });
  const cancel = el("button", { type: "button", class: "small", text: "Cancel", onclick: () => renderThread() });
  node.querySelector(".body").replaceWith(box);
  node.querySelector(".actions").replaceChildren(ok, cancel);
  box.focus();
  const go = () => {
    const text = box.value.trim();
    if (!text) return;
    const branch = newConversation(current.model);
    branch.title = current.title + " (branch)";
    branch.branchedFrom = current.id;
    branch.messages = structuredClone(current.messages.slice(0, index));
    branch.messages.push({ role: "user", content: text, attachments: m.attachments || [] });
    ensureStored(branch);
    current = branch;
    save();
    renderThread();
    renderList();
    generate();
  };
  ok.addEventListener("click", go);
  box.addEventListener("keydown", e => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); go(); }
    if (e.key === "Escape") { e.preventDefault(); renderThread(); }
  });
}

function regenerate() {
  if (running) return;
  const last = current.messages[current.messages.length - 1];
  if (last && last.role === "assistant") current.messages.pop();
  renderThread();
  generate();
}

function continueReply() {
  if (running) return;
  generate({ continueLast: true });
}

// ---------- sending ----------

function userContent(m) {
  let text = "";
  for (const a of m.attachments || []) text += "File " + a.name + ":\n```\n" + a.text + "\n```\n\n";
  return text + m.content;
}

function apiMessages(conv, upto) {
  const out = [];
  const system = $("system").value.trim();
  if (system) out.push({ role: "system", content: system });
  for (const m of conv.messages.slice(0, upto)) {
    if (m.role === "user") out.push({ role: "user", content: userContent(m) });
    else if (m.role === "assistant") {
      if (m.error && !m.content && !(m.tool_calls || []).length) continue;  // a failed turn is not sent back
      const msg = { role: "assistant", content: m.content || "" };
      if ((m.tool_calls || []).length) msg.tool_calls = m.tool_calls;
      out.push(msg);
    } else if (m.role === "tool") out.push({ role: "tool", content: m.content, tool_call_id: m.tool_call_id });
  }
  return out;
}

async function send() {
  if (running) return;
  const text = ui.input.value.trim();
  if (!text && !pending.length) return;
  if (!ui.model.value) { notice("No model to send to.", true); return; }
  current.model = ui.model.value;
  current.messages.push({ role: "user", content: text, attachments: pending });
  if (current.title === "New chat") current.title = (text || pending[0].name).slice(0, 60);
  ensureStored(current);
  pending = [];
  renderAttachments();
  ui.input.value = "";
  save();
  renderThread();
  renderList();
  await generate();
}

async function generate({ continueLast = false } = {}) {
  const conv = current;
  let m;
  let body;
  try {
    body = { model: conv.model, stream: true, stream_options: { include_usage: true }, ...requestOptions() };
  } catch (e) {
    notice(e.message, true);
    return;
  }
  if (continueLast) {
    m = conv.messages[conv.messages.length - 1];
    body.messages = apiMessages(conv, conv.messages.length);
    m.streaming = true;
    delete m.error;
    delete m.timings;
  } else {
    body.messages = apiMessages(conv, conv.messages.length);
    m = { role: "assistant", content: "", reasoning: "", tool_calls: [], model: conv.model, streaming: true };
    conv.messages.push(m);
  }
  const index = conv.messages.indexOf(m);
  renderThread();
  const node = ui.thread.querySelector(`article[data-index="${index}"]`);
  const controller = new AbortController();
  running = { controller, conv };
  ui.send.hidden = true;
  ui.stop.hidden = false;
  let scheduled = false;
  let prefillRead = false, continued = "";
  const redraw = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      if (current === conv && node.isConnected) {
        fillMessage(node, m, index);
        ui.thread.scrollTop = ui.thread.scrollHeight;
      }
    });
  };
  try {
    await postSSE("/v1/chat/completions", body, controller.signal, ev => {
      if (ev.error) throw new ApiError(500, ev.error.message || JSON.stringify(ev.error));
      for (const ch of ev.choices || []) {
        const d = ch.delta || {};
        // A continued reply whose prefill opened a thought or a tool call: the
        // server's reply parser read the prefill into those, so its raw text goes.
        if (continueLast && !prefillRead && (d.reasoning_content || (d.tool_calls || []).length)) {
          prefillRead = true;
          m.content = continued;
        }
        if (d.reasoning_content) m.reasoning = (m.reasoning || "") + d.reasoning_content;
        if (d.content) {
          m.content = (m.content || "") + d.content;
          continued += d.content;
        }
        for (const tc of d.tool_calls || []) {
          m.tool_calls = m.tool_calls || [];
          const slot = m.tool_calls[tc.index] || (m.tool_calls[tc.index] = { id: "", type: "function", function: { name: "", arguments: "" } });
          if (tc.id) slot.id = tc.id;
          if (tc.function && tc.function.name) slot.function.name += tc.function.name;
          if (tc.function && tc.function.arguments) slot.function.arguments += tc.function.arguments;
        }
        if (ch.finish_reason) m.finish = ch.finish_reason;
      }
      if (ev.timings) m.timings = ev.timings;
      if (ev.usage && !ev.timings) m.timings = { prompt_n: ev.usage.prompt_tokens, predicted_n: ev.usage.completion_tokens };
      redraw();
    });
  } catch (e) {
    if (e.name === "AbortError") m.finish = "stopped";
    else m.error = "Error: " + e.message;
  } finally {
    m.streaming = false;
    running = null;
    ui.send.hidden = false;
    ui.stop.hidden = true;
    conv.updated = Date.now();
    save();
    if (current === conv) {
      renderThread();
      ui.input.focus();
    }
    renderList();
  }
}

function stop() {
  if (running) running.controller.abort();
}

// ---------- attachments ----------

async function addFiles(files) {
  for (const f of files) {
    if (f.size > MAX_ATTACHMENT_BYTES) { notice(`${f.name}: larger than 1 MiB, not attached`, true); continue; }
    const buf = new Uint8Array(await f.arrayBuffer());
    if (buf.includes(0)) { notice(`${f.name}: not a text file (it has NUL bytes), not attached`, true); continue; }
    let text;
    try { text = new TextDecoder("utf-8", { fatal: true }).decode(buf); } catch {
      notice(`${f.name}: not UTF-8 text, not attached`, true);
      continue;
    }
    pending.push({ name: f.name, text });
  }
  renderAttachments();
}

function renderAttachments() {
  ui.attachments.innerHTML = "";
  pending.forEach((a, i) => ui.attachments.append(el("span", { class: "chip" }, a.name + ` (${a.text.length} characters) `,
    el("button", { type: "button", class: "icon small", "aria-label": "Remove " + a.name, text: "×",
                   onclick: () => { pending.splice(i, 1); renderAttachments(); } }))));
}

let noticeTimer = null;
function notice(text, isError) {
  ui.notice.textContent = text;
  ui.notice.classList.toggle("error-text", !!isError);
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { ui.notice.textContent = ""; }, 8000);
}

// ---------- export / import ----------

function exportAll() {
  const blob = new Blob([JSON.stringify({ kiln_conversations: 1, conversations }, null, 2)], { type: "application/json" });
  const a = el("a", { href: URL.createObjectURL(blob), download: "kiln-conversations.json" });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

async function importFile(file) {
  try {
    const j = JSON.parse(await file.text());
    const list = Array.isArray(j) ? j : j.conversations;
    if (!Array.isArray(list)) throw new Error("no conversations array");
    let n = 0;
    for (const c of list) {
      if (!c || !Array.isArray(c.messages)) continue;
      const copy = { ...newConversation(c.model), ...c, id: conversations.some(x => x.id === c.id) || !c.id ? uid() : c.id };
      copy.messages = c.messages.filter(m => m && typeof m.role === "string").map(m => ({ ...m, streaming: false }));
      copy.title = String(copy.title || "Imported chat");
      copy.updated = Number(copy.updated) || Date.now();
      conversations.push(copy);
      n++;
    }
    save();
    renderList();
    notice(`Imported ${n} conversation${n === 1 ? "" : "s"}.`);
    const newest = conversations[conversations.length - 1];
    if (n) select(newest.id);
  } catch (e) {
    notice("Import failed: " + e.message, true);
  }
}

// ---------- wiring ----------

function closeSidebarOnPhone() {
  document.body.classList.remove("sidebar-open");
  $("toggle-sidebar").setAttribute("aria-expanded", "false");
}

function wire() {
  $("composer").addEventListener("submit", e => { e.preventDefault(); send(); });
  ui.input.addEventListener("keydown", e => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  ui.input.addEventListener("paste", e => {
    const text = e.clipboardData && e.clipboardData.getData("text/plain");
    if (text && text.length > PASTE_ATTACH_CHARS) {
      e.preventDefault();
      pending.push({ name: `pasted-${pending.length + 1}.txt`, text });
      renderAttachments();
      notice(`The pasted text (${text.length} characters) is attached as a file.`);
    }
  });
  ui.stop.addEventListener("click", stop);
  $("attach-button").addEventListener("click", () => ui.attach.click());
  $("import-button").addEventListener("click", () => $("import").click());
  ui.attach.addEventListener("change", () => { addFiles([...ui.attach.files]); ui.attach.value = ""; });
  // Files dropped on the page are attachments too.
  document.addEventListener("dragover", e => e.preventDefault());
  document.addEventListener("drop", e => { e.preventDefault(); if (e.dataTransfer.files.length) addFiles([...e.dataTransfer.files]); });
  $("new-chat").addEventListener("click", () => { startNew(); closeSidebarOnPhone(); });
  ui.search.addEventListener("input", renderList);
  $("export").addEventListener("click", exportAll);
  $("import").addEventListener("change", e => { if (e.target.files[0]) importFile(e.target.files[0]); e.target.value = ""; });
  ui.model.addEventListener("change", () => {
    current.model = ui.model.value;
    if (conversations.includes(current)) save();
    modelCapabilities(current.model);
  });
  const toggleSettings = open => {
    ui.settings.hidden = !open;
    $("open-settings").setAttribute("aria-expanded", String(open));
    if (open) $("system").focus(); else { saveSettings(); $("open-settings").focus(); }
  };
  $("open-settings").addEventListener("click", () => toggleSettings(ui.settings.hidden));
  $("close-settings").addEventListener("click", () => toggleSettings(false));
  ui.settings.addEventListener("change", saveSettings);
  $("toggle-sidebar").addEventListener("click", () => {
    const open = document.body.classList.toggle("sidebar-open");
    $("toggle-sidebar").setAttribute("aria-expanded", String(open));
  });
  document.addEventListener("keydown", e => {
    if (e.key === "Escape") {
      if (running) { e.preventDefault(); stop(); }
      else if (!ui.settings.hidden) toggleSettings(false);
      else closeSidebarOnPhone();
    }
    if (e.key.toLowerCase() === "o" && e.ctrlKey && e.shiftKey) { e.preventDefault(); startNew(); }
  });
  installCopyHandler(ui.thread);
}

// marked is a classic deferred script: it has run by DOMContentLoaded, and so has this module.
loadSettings();
wire();
startNew();
ui.input.focus();
loadModels();

// For the browser tests and the curious: the page's state.
window.kilnChat = { get conversations() { return conversations; }, get current() { return current; }, get running() { return !!running; } };
