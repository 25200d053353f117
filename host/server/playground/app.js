// The playground: a chat on one thread, streamed with @tenxgraph/client
// (client.js is the compiled package, copied here by `npm run
// build:playground`), and five browser tools registered as handlers of the
// quickstart's remote tools. Messages may carry images and files (attach,
// paste or drop them); the thread's are shown from its blobs.

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
  attachments: $("attachments"),
  attach: $("attach"),
  attachInput: $("attach-input"),
  pickInput: $("pick-input"),
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
  pick_file: {
    description: "Asks you to choose a file (a button in the conversation opens the picker) and returns it as an attachment.",
    // A browser opens a file picker only on a person's click, so the
    // handler shows a button and waits for it: the run stays paused until
    // the person chooses a file or declines.
    handler: ({ prompt, accept }, ctx) => askForFile(ctx.callId, prompt, accept, ctx.signal),
  },
};

// asks are the pick_file calls waiting for the person, shown at the end of
// the transcript with a button that opens the picker.
const asks = new Map(); // call id → { prompt, accept, resolve, reject }

function askForFile(id, prompt, accept, signal) {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal.removeEventListener("abort", onAbort);
      asks.delete(id);
      renderTranscript();
    };
    const onAbort = () => {
      done();
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    asks.set(id, {
      prompt: typeof prompt === "string" && prompt.trim() ? prompt : "The assistant asks for a file.",
      accept: typeof accept === "string" ? accept : "",
      resolve: (file) => {
        done();
        resolve(file);
      },
      decline: () => {
        done();
        reject(new Error("the person declined to choose a file"));
      },
    });
    renderTranscript();
  });
}

// One input serves every ask: a click on an ask's button points it at that
// ask and opens the picker (the click is the gesture browsers require).
let picking = null;
els.pickInput.addEventListener("change", () => {
  const file = els.pickInput.files?.[0];
  const ask = asks.get(picking);
  els.pickInput.value = "";
  if (file && ask) ask.resolve(file);
});

function renderAsk(id, ask) {
  const li = el("li", { class: "step ask", "data-call": id });
  const choose = el("button", { type: "button", class: "small" }, "Choose a file…");
  choose.addEventListener("click", () => {
    picking = id;
    els.pickInput.accept = ask.accept;
    els.pickInput.click();
  });
  const decline = el("button", { type: "button", class: "secondary small" }, "Decline");
  decline.addEventListener("click", () => ask.decline());
  const actions = el("div", { class: "actions" }, choose, decline);
  li.append(el("strong", {}, "pick_file"), `: ${ask.prompt}`, actions);
  return li;
}

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

const isMedia = (b) => b.type === "image" || b.type === "file" || b.type === "audio";

// renderMessage turns one message into transcript items: text bubbles
// (with the message's images and files) and a line per tool call, remote
// hand-over and result (with its attachments).
function renderMessage(m, names) {
  const items = [];
  const text = m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
  const media = m.content.filter(isMedia);
  if ((text || media.length) && (m.role === "user" || m.role === "assistant")) {
    const li = el("li", { class: `msg ${m.role}`, "data-id": m.id ?? "" });
    const bubble = el("div", { class: "bubble" });
    if (media.length) bubble.append(renderMedia(media));
    if (text) bubble.append(text);
    li.append(el("div", { class: "who" }, m.role === "user" ? "You" : "Assistant"), bubble);
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
      const li = step(b.is_error ? "error" : "", b.is_error ? "error from " : "result of ", name, `: ${short(b.content)}`);
      if (b.attachments?.length) li.append(renderMedia(b.attachments));
      items.push(li);
    }
  }
  return items;
}

// Stored media are read once per thread with the client (so with the API
// key: an <img src> cannot carry it) and shown through object URLs.
let blobURLs = new Map(); // blob reference → Promise of an object URL

function blobURL(ref) {
  let url = blobURLs.get(ref);
  if (!url) {
    url = client.getBlob(threadId, ref).then((b) => URL.createObjectURL(b));
    url.catch(() => blobURLs.delete(ref)); // read again next time
    blobURLs.set(ref, url);
  }
  return url;
}

function forgetBlobs() {
  for (const url of blobURLs.values()) url.then((u) => URL.revokeObjectURL(u), () => {});
  blobURLs = new Map();
}

function sizeText(n) {
  if (typeof n !== "number") return "";
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}

// renderMedia shows blocks: images as thumbnails, other files as a chip
// that downloads them.
function renderMedia(blocks) {
  const box = el("div", { class: "media" });
  for (const b of blocks) {
    const label = [b.filename ?? b.type, b.mime_type, sizeText(b.size)].filter(Boolean).join(" · ");
    if (!b.blob) {
      box.append(el("span", { class: "filechip" }, label));
      continue;
    }
    if (b.type === "image") {
      const img = el("img", { class: "thumb", alt: b.filename ?? `image (${b.mime_type})`, title: label, "data-blob": b.blob });
      if (b.width && b.height) {
        img.width = Math.min(b.width, 220, Math.round((b.width * 160) / b.height));
      }
      blobURL(b.blob).then((u) => (img.src = u), (err) => img.replaceWith(el("span", { class: "filechip" }, `${label} (not readable: ${err.message})`)));
      box.append(img);
    } else {
      const a = el("a", { class: "filechip", href: "#", "data-blob": b.blob, title: "Download" }, label);
      a.addEventListener("click", async (e) => {
        e.preventDefault();
        const save = el("a", { href: await blobURL(b.blob), download: b.filename ?? b.blob.slice(7, 23) });
        save.click();
      });
      box.append(a);
    }
  }
  return box;
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
  for (const [id, ask] of asks) items.push(renderAsk(id, ask));
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
      return `${d.role}: ${short(d.content.map((b) => (b.type === "text" ? b.text : b.type === "tool_result" ? "result" : isMedia(b) ? `[${b.type} ${b.mime_type}]` : b.name)).join(", "), 80)}`;
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
  if ((!text && attached.length === 0) || running) return;
  // The client reads each File and sends it as base64 beside the text.
  const content = text ? [text, ...attached.map((a) => a.file)] : attached.map((a) => a.file);
  els.message.value = "";
  clearAttachments();
  sessionStorage.setItem("tenxgraph.thread", threadId);
  return run(async () => {
    for await (const ev of client.stream([{ role: "user", content }], { threadId, signal: running.signal, response: "delta" })) {
      onEvent(ev);
    }
  }).then(() => els.message.focus());
}

// ---------------------------------------------------------------------------
// Attachments: files for the next message, from the Attach button, a paste
// or a drop. What the picker offers is a convenience; the server checks
// every file's bytes, type and size.

let attached = []; // { file, url } in the order added

function attach(files) {
  for (const file of files) {
    attached.push({ file, url: file.type.startsWith("image/") ? URL.createObjectURL(file) : null });
  }
  renderAttachments();
}

function clearAttachments() {
  for (const a of attached) if (a.url) URL.revokeObjectURL(a.url);
  attached = [];
  renderAttachments();
}

function renderAttachments() {
  els.attachments.replaceChildren(
    ...attached.map((a, i) => {
      const li = el("li", {});
      if (a.url) li.append(el("img", { src: a.url, alt: "" }));
      const remove = el("button", { type: "button", class: "secondary small", "aria-label": `Remove ${a.file.name}` }, "×");
      remove.addEventListener("click", () => {
        if (a.url) URL.revokeObjectURL(a.url);
        attached.splice(i, 1);
        renderAttachments();
      });
      li.append(el("span", {}, `${a.file.name || "pasted"} · ${sizeText(a.file.size)}`), remove);
      return li;
    }),
  );
  els.message.required = attached.length === 0;
}

function startNewThread() {
  running?.abort();
  setThread(newThreadId());
  forgetBlobs();
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
els.attach.addEventListener("click", () => els.attachInput.click());
els.attachInput.addEventListener("change", () => {
  attach(els.attachInput.files ?? []);
  els.attachInput.value = "";
  els.message.focus();
});
els.message.addEventListener("paste", (e) => {
  const files = [...(e.clipboardData?.files ?? [])];
  if (files.length === 0) return; // text pastes as usual
  e.preventDefault();
  attach(files);
});
els.form.addEventListener("dragover", (e) => {
  if (!e.dataTransfer?.types.includes("Files")) return;
  e.preventDefault();
  els.form.classList.add("dropping");
});
els.form.addEventListener("dragleave", () => els.form.classList.remove("dropping"));
els.form.addEventListener("drop", (e) => {
  els.form.classList.remove("dropping");
  if (!e.dataTransfer?.files.length) return;
  e.preventDefault();
  attach(e.dataTransfer.files);
});
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
