// The playground: a chat on one thread, streamed with @tenxgraph/client
// (client.js is the compiled package, copied here by `npm run
// build:playground`), and four browser tools registered as handlers of the
// quickstart's remote tools.

import { Client, TenxgraphError, MaxRoundsError } from "./client.js";

const $ = (id) => document.getElementById(id);
const els = {
  threadId: $("thread-id"),
  newThread: $("new-thread"),
  transcript: $("transcript"),
  notice: $("notice"),
  noticeText: $("notice-text"),
  noticeActions: $("notice-actions"),
  form: $("composer"),
  message: $("message"),
  send: $("send"),
  stop: $("stop"),
  tools: $("tools"),
  events: $("events"),
  clearLog: $("clear-log"),
  apiKey: $("api-key"),
};

// ---------------------------------------------------------------------------
// Browser tools: what the page can do that the server cannot.

// The last text selected outside the composer: focusing the message box
// collapses the page's selection, so get_selection answers with this.
let lastSelection = "";
document.addEventListener("selectionchange", () => {
  const sel = window.getSelection();
  const text = sel ? sel.toString() : "";
  if (text.trim() && !els.form.contains(sel.anchorNode)) lastSelection = text;
});

const tools = {
  read_clipboard: {
    description: "Reads the clipboard text with navigator.clipboard.readText (the browser may ask first).",
    handler: async () => {
      if (!navigator.clipboard?.readText) {
        throw new Error("this browser offers no clipboard API here (it needs https or localhost)");
      }
      return { text: await navigator.clipboard.readText() };
    },
  },
  change_background: {
    description: "Sets document.body.style.background to a CSS color.",
    handler: ({ color }) => {
      if (typeof color !== "string" || !CSS.supports("background-color", color)) {
        throw new Error(`${JSON.stringify(color)} is not a CSS color`);
      }
      const previous = getComputedStyle(document.body).backgroundColor;
      document.body.style.background = color;
      return { ok: true, color, previous };
    },
  },
  get_selection: {
    description: "Returns the text selected on this page (window.getSelection).",
    handler: () => {
      const now = window.getSelection()?.toString() ?? "";
      const text = now.trim() && !els.form.contains(window.getSelection().anchorNode) ? now : lastSelection;
      return { text: text || "(nothing is selected: select some text on the page first)" };
    },
  },
  get_page_info: {
    description: "Returns the page's title, URL and size.",
    handler: () => ({
      title: document.title,
      url: location.href,
      width: window.innerWidth,
      height: window.innerHeight,
      language: navigator.language,
    }),
  },
};

// ---------------------------------------------------------------------------
// Client and thread

let client; // made below, once the API key field is filled in
// A reload keeps the thread the tab last sent on (sessionStorage).
const storedThread = sessionStorage.getItem("tenxgraph.thread");
let threadId = storedThread || newThreadId();
let running = null; // the AbortController of the run in flight
let messages = []; // the thread's messages: read once, then each run's delta appended
const drafts = new Map(); // message id → streamed text not yet a message
let t0 = performance.now();

function makeClient() {
  const c = new Client({ baseUrl: location.origin, apiKey: els.apiKey.value.trim() || undefined, onApproval: askApproval });
  for (const [name, tool] of Object.entries(tools)) {
    c.registerToolHandler(name, async (args, ctx) => {
      setToolState(name, "running", "running…");
      const start = performance.now();
      try {
        const result = await tool.handler(args, ctx);
        setToolState(name, "done", `done in ${Math.round(performance.now() - start)} ms`);
        return result;
      } catch (err) {
        setToolState(name, "failed", "failed");
        throw err;
      }
    });
  }
  return c;
}

function newThreadId() {
  const bytes = crypto.getRandomValues(new Uint8Array(6));
  return "playground-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function setThread(id) {
  threadId = id;
  sessionStorage.removeItem("tenxgraph.thread");
  els.threadId.textContent = id;
}

// ---------------------------------------------------------------------------
// Rendering

function renderTools() {
  els.tools.replaceChildren(
    ...Object.entries(tools).map(([name, tool]) => {
      const li = el("li", { class: "tool", id: `tool-${name}` });
      li.append(el("span", { class: "name mono" }, name), el("span", { class: "state" }, "idle"), el("span", { class: "desc" }, tool.description));
      return li;
    }),
  );
}

function setToolState(name, state, label) {
  const li = $(`tool-${name}`);
  if (!li) return;
  li.className = `tool ${state}`;
  li.querySelector(".state").textContent = label;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

const short = (v, n = 120) => {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > n ? s.slice(0, n - 1) + "…" : s;
};

// renderMessage turns one message into transcript items: text bubbles and
// a line per tool call, remote hand-over and result.
function renderMessage(m, names) {
  const items = [];
  const text = m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
  if (text && (m.role === "user" || m.role === "assistant")) {
    const li = el("li", { class: `msg ${m.role}`, "data-id": m.id ?? "" });
    li.append(el("div", { class: "who" }, m.role === "user" ? "You" : "Assistant"), el("div", { class: "bubble" }, text));
    items.push(li);
  }
  for (const b of m.content) {
    if (b.type === "tool_call") {
      names.set(b.id, b.name);
      items.push(step("", "calls ", b.name, ` ${short(b.arguments)}`));
    } else if (b.type === "remote_tool_call") {
      items.push(step("remote", "paused: handed ", b.name, " to the browser"));
    } else if (b.type === "tool_result") {
      const name = names.get(b.tool_call_id) ?? b.tool_call_id;
      items.push(step(b.is_error ? "error" : "", b.is_error ? "error from " : "result of ", name, `: ${short(b.content)}`));
    }
  }
  return items;
}

function step(kind, before, name, after) {
  return el("li", { class: `step ${kind}` }, before, el("strong", {}, name), after);
}

function renderTranscript() {
  const names = new Map();
  const items = messages.flatMap((m) => renderMessage(m, names));
  for (const [id, text] of drafts) {
    const li = el("li", { class: "msg assistant draft", "data-id": id });
    li.append(el("div", { class: "who" }, "Assistant"), el("div", { class: "bubble" }, text));
    items.push(li);
  }
  els.transcript.replaceChildren(...items);
  els.transcript.scrollTop = els.transcript.scrollHeight;
}

function addMessage(m) {
  if (m.id && messages.some((x) => x.id === m.id)) return;
  drafts.delete(m.id);
  messages.push(m);
  renderTranscript();
}

// ---------------------------------------------------------------------------
// Event log

function summary(ev) {
  const d = ev.data;
  switch (ev.type) {
    case "run_started":
      return d.resumed ? "resumed the paused thread" : "new run";
    case "node_started":
    case "node_finished":
      return `${d.node}, step ${d.step}`;
    case "text_delta":
      return JSON.stringify(d.text);
    case "message":
      return `${d.role}: ${short(d.content.map((b) => (b.type === "text" ? b.text : b.type === "tool_result" ? "result" : b.name)).join(", "), 80)}`;
    case "tool_started":
      return `${d.name} (${d.provider}, on the server)`;
    case "tool_finished":
      return `${d.name}${d.is_error ? " failed" : ""} in ${((d.duration_ns ?? 0) / 1e6).toFixed(1)} ms`;
    case "tool_progress":
      return `${d.name} ${d.progress}${d.total ? "/" + d.total : ""}${d.message ? ": " + d.message : ""}`;
    case "interrupted":
      return `waiting for ${[...d.remote_tool_calls.map((c) => c.name), ...(d.approval_requests ?? []).map((c) => `approval of ${c.name}`)].join(", ")}`;
    case "approval_requested":
      return `${d.name} ${short(d.arguments, 60)} needs approval`;
    case "usage":
      return `${d.input_tokens} in, ${d.output_tokens} out`;
    case "end":
      return `status ${d.status}`;
    case "tool_handler_started":
      return `${d.name} ${short(d.arguments, 60)}`;
    case "tool_handler_finished":
      return `${d.name} → ${d.result.is_error ? "error: " : ""}${short(d.result.content, 80)} (${Math.round(d.duration_ms)} ms)`;
    case "tool_ignored":
    case "config_ignored":
      return d.reason;
  }
  return short(d);
}

function logEvent(type, detail, kind = "") {
  const last = els.events.lastElementChild;
  // Consecutive text deltas fold into one line.
  if (type === "text_delta" && last?.dataset.type === "text_delta") {
    last.querySelector(".detail").textContent = JSON.stringify(JSON.parse(last.dataset.text) + JSON.parse(detail));
    last.dataset.text = last.querySelector(".detail").textContent;
  } else {
    const li = el("li", { class: kind, "data-type": type, "data-text": detail });
    li.append(
      el("span", { class: "t" }, `${((performance.now() - t0) / 1000).toFixed(2)}s`),
      el("span", { class: "type" }, type),
      el("span", { class: "detail" }, detail),
    );
    els.events.append(li);
    while (els.events.children.length > 400) els.events.firstElementChild.remove();
  }
  els.events.scrollTop = els.events.scrollHeight;
}

function onEvent(ev) {
  const kind = ev.type.startsWith("tool_handler_")
    ? ev.type === "tool_handler_finished" && ev.data.result.is_error ? "client bad" : "client"
    : ev.type === "interrupted" ? "pause" : "";
  logEvent(ev.type, summary(ev), kind);
  switch (ev.type) {
    case "text_delta":
      drafts.set(ev.data.message_id, (drafts.get(ev.data.message_id) ?? "") + ev.data.text);
      renderTranscript();
      break;
    case "message":
      addMessage(ev.data);
      break;
    case "end":
      // A delta: what the run added, at its offset. The message events
      // already showed them; this puts them in the server's order. A
      // transcript that missed a turn (another tab ran on the thread) is
      // read again from the server.
      if (ev.data.offset <= messages.length) {
        messages = messages.slice(0, ev.data.offset).concat(ev.data.messages);
      } else {
        reloadThread();
      }
      drafts.clear();
      renderTranscript();
      break;
  }
}

// ---------------------------------------------------------------------------
// Notices

function showNotice(text, actions = []) {
  els.noticeText.textContent = text;
  els.noticeActions.replaceChildren(
    ...actions.map(([label, fn]) => {
      const b = el("button", { type: "button", class: "secondary small" }, label);
      b.addEventListener("click", fn);
      return b;
    }),
  );
  els.notice.hidden = false;
}

function hideNotice() {
  els.notice.hidden = true;
}

// askApproval shows a call that needs approval with Approve and Deny
// buttons and resolves with the person's choice; aborting the run denies.
function askApproval(req, { signal }) {
  return new Promise((resolve) => {
    const args = JSON.stringify(req.arguments);
    const done = (decision) => {
      signal.removeEventListener("abort", onAbort);
      hideNotice();
      logEvent("approval", `${req.name}: ${decision.approved ? "approved" : "denied"}`, "client");
      resolve(decision);
    };
    const onAbort = () => done({ approved: false, reason: "the run was stopped before the person answered" });
    signal.addEventListener("abort", onAbort, { once: true });
    showNotice(`The model wants to run ${req.name} with ${args}. Allow it?`, [
      ["Approve", () => done({ approved: true })],
      ["Deny", () => done({ approved: false, reason: "the person at the playground denied it" })],
    ]);
  });
}

function pausedNotice(calls, why) {
  const names = calls.map((c) => c.name).join(", ");
  showNotice(`${why} The thread waits for: ${names}.`, [
    ["Run them now", () => run(() => client.resume(threadId, { signal: running.signal, response: "delta" }).then((res) => onEvent({ type: "end", data: res })))],
    ["New thread", startNewThread],
  ]);
}

async function explain(err) {
  if (err?.name === "AbortError") {
    const t = await client.getThread(threadId).catch(() => null);
    if (t?.status === "interrupted") pausedNotice(t.remote_tool_calls, "Stopped.");
    else showNotice("Stopped.");
    return;
  }
  if (err instanceof TenxgraphError && err.code === "pending_calls") {
    const t = await client.getThread(threadId).catch(() => null);
    pausedNotice(t?.remote_tool_calls ?? [], "This thread is paused, so it cannot take a new message yet.");
    return;
  }
  if (err instanceof TenxgraphError && err.status === 401) {
    showNotice("The server wants an API key: enter it under Settings, then send again.");
    els.apiKey.closest("details").open = true;
    els.apiKey.focus();
    return;
  }
  if (err instanceof MaxRoundsError) {
    pausedNotice(err.pendingCalls, err.message);
    return;
  }
  showNotice(err instanceof TenxgraphError ? `${err.code}: ${err.message}` : String(err?.message ?? err));
}

// ---------------------------------------------------------------------------
// Running

async function run(fn) {
  if (running) return;
  hideNotice();
  running = new AbortController();
  els.send.disabled = true;
  els.stop.disabled = false;
  els.transcript.setAttribute("aria-busy", "true");
  try {
    await fn();
  } catch (err) {
    if (err?.name === "AbortError") logEvent("stopped", "you stopped the run: requests and handlers were cancelled", "bad");
    else logEvent("error", err?.message ?? String(err), "bad");
    await explain(err);
  } finally {
    running = null;
    for (const li of els.tools.querySelectorAll(".tool.running")) setToolState(li.id.slice(5), "failed", "stopped");
    drafts.clear();
    renderTranscript();
    els.send.disabled = false;
    els.stop.disabled = true;
    els.transcript.removeAttribute("aria-busy");
  }
}

function send(text) {
  text = text.trim();
  if (!text || running) return;
  els.message.value = "";
  sessionStorage.setItem("tenxgraph.thread", threadId);
  return run(async () => {
    for await (const ev of client.stream([{ role: "user", content: text }], { threadId, signal: running.signal, response: "delta" })) {
      onEvent(ev);
    }
  }).then(() => els.message.focus());
}

function startNewThread() {
  running?.abort();
  setThread(newThreadId());
  messages = [];
  drafts.clear();
  hideNotice();
  renderTranscript();
  els.events.replaceChildren();
  t0 = performance.now();
  document.body.style.background = "";
  for (const name of Object.keys(tools)) setToolState(name, "", "idle");
  els.message.focus();
}

// ---------------------------------------------------------------------------
// Wiring

els.form.addEventListener("submit", (e) => {
  e.preventDefault();
  send(els.message.value);
});
els.message.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send(els.message.value);
  }
});
els.stop.addEventListener("click", () => running?.abort());
els.newThread.addEventListener("click", startNewThread);
els.clearLog.addEventListener("click", () => els.events.replaceChildren());
for (const chip of document.querySelectorAll(".chip")) {
  chip.addEventListener("click", () => send(chip.textContent));
}
els.apiKey.value = sessionStorage.getItem("tenxgraph.apiKey") ?? "";
function saveKey() {
  sessionStorage.setItem("tenxgraph.apiKey", els.apiKey.value.trim());
  client = makeClient();
}
els.apiKey.addEventListener("change", saveKey);
$("settings-form").addEventListener("submit", (e) => {
  e.preventDefault();
  saveKey();
  els.message.focus();
});
client = makeClient();

renderTools();
setThread(threadId);
renderTranscript();

// reloadThread reads the whole thread: on a reload, and when a run's delta
// does not follow the transcript.
function reloadThread() {
  const id = threadId;
  return client.getThread(id).then(
    (t) => {
      if (id !== threadId) return; // a new thread was started meanwhile
      messages = t.messages;
      renderTranscript();
      if (t.status === "interrupted" && !running) pausedNotice(t.remote_tool_calls, "This thread was left paused.");
    },
    () => {}, // gone (the server's store was reset) or the server wants a key: nothing to show
  );
}

if (storedThread) {
  sessionStorage.setItem("tenxgraph.thread", storedThread);
  reloadThread();
}
els.message.focus();
