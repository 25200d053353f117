// @tenxgraph/client against a real `tenxgraph serve` on the quickstart
// config (its scripted model and its remote tools read_clipboard,
// change_background, get_selection, get_page_info): the pause → handler →
// resume loop, parallel calls, failures the client turns into error results,
// missing handlers, abort, auth, HTTP errors, stream events, the loop guard.

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, TenxgraphError, MaxRoundsError, MissingHandlerError } from "../dist/index.js";
import { startServer } from "./_server.mjs";

let server;
let base;
let threads = 0;
const thread = (name) => `${name}-${process.pid}-${++threads}`;

before(async () => {
  server = await startServer();
  base = server.base;
});

after(async () => {
  await server?.stop();
});

// lastText is the text of the thread's last assistant message.
function lastText(res) {
  const m = res.messages.filter((m) => m.role === "assistant").at(-1);
  return m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

function results(messages) {
  return messages.flatMap((m) => m.content.filter((b) => b.type === "tool_result"));
}

// recordingFetch records each request body the client sends.
function recordingFetch(sent) {
  return async (url, init) => {
    sent.push({ url: String(url), method: init.method, body: init.body ? JSON.parse(init.body) : undefined, headers: init.headers });
    return fetch(url, init);
  };
}

describe("the loop", () => {
  test("a remote tool: pause, handler, resume, completed", async () => {
    const client = new Client({ baseUrl: base + "/" });
    const seen = [];
    client.registerToolHandler("change_background", async (args, ctx) => {
      seen.push({ args, ctx });
      return { ok: true, color: args.color };
    });
    const threadId = thread("loop");
    const res = await client.invoke([{ role: "user", content: "make the background blue" }], { threadId });

    assert.equal(res.status, "completed");
    assert.equal(res.thread_id, threadId);
    assert.deepEqual(res.remote_tool_calls, []);
    assert.equal(lastText(res), "Done: the background is now blue.");
    assert.equal(seen.length, 1, "the handler ran once");
    assert.deepEqual(seen[0].args, { color: "blue" });
    assert.equal(seen[0].ctx.threadId, threadId);
    assert.equal(seen[0].ctx.name, "change_background");
    assert.match(seen[0].ctx.callId, /\S/);
    assert.ok(seen[0].ctx.signal instanceof AbortSignal);
    assert.equal(seen[0].ctx.signal.aborted, false, "a completed run does not abort its handlers' signals");

    const [result] = results(res.messages);
    assert.equal(result.tool_call_id, seen[0].ctx.callId);
    assert.deepEqual(result.content, { ok: true, color: "blue" });
    assert.equal(result.is_error, false);

    const t = await client.getThread(threadId);
    assert.equal(t.status, "completed");
    assert.deepEqual(t.messages, res.messages);
  });

  test("a bare string is one user message; a thread id is made when absent", async () => {
    const client = new Client({ baseUrl: base });
    const res = await client.invoke("hello");
    assert.equal(res.status, "completed");
    assert.match(res.thread_id, /^t-[0-9a-f]{24}$/);
    assert.match(lastText(res), /scripted demo model/);
    assert.deepEqual(res.messages[0].content, [{ type: "text", text: "hello" }]);
  });

  test("a server tool and a remote tool in one step: only the remote one reaches the client", async () => {
    const client = new Client({ baseUrl: base });
    let calls = 0;
    client.registerToolHandler("read_clipboard", () => {
      calls++;
      return { text: "copied words" };
    });
    const res = await client.invoke("what is 2+3*4 and what is on my clipboard?", { threadId: thread("mixed") });
    assert.equal(calls, 1);
    assert.equal(lastText(res), "2+3*4 = 14. Your clipboard holds: copied words");
  });

  test("parallel remote calls: handlers run concurrently; results go back in call order, in one tool message", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    const started = [];
    let release;
    const bothStarted = new Promise((resolve) => (release = resolve));
    const order = [];
    client.registerToolHandler("change_background", async ({ color }) => {
      started.push("change_background");
      if (started.length === 2) release();
      await bothStarted;
      await sleep(50); // finishes last
      order.push("change_background");
      return { ok: true, color };
    });
    client.registerToolHandler("read_clipboard", async () => {
      started.push("read_clipboard");
      if (started.length === 2) release();
      await bothStarted; // deadlocks (and times out) unless both run at once
      order.push("read_clipboard");
      return { text: "parallel clipboard" };
    });
    const res = await client.invoke("make the background blue and read my clipboard", { threadId: thread("parallel") });

    assert.deepEqual(order, ["read_clipboard", "change_background"], "the second call finished first");
    assert.equal(lastText(res), "The background is now blue, and your clipboard holds: parallel clipboard");
    assert.equal(sent.length, 2, "one request to start, one to resume");
    const resume = sent[1].body.input.messages;
    assert.equal(resume.length, 1, "one tool message");
    assert.equal(resume[0].role, "tool");
    const calls = res.messages.flatMap((m) => m.content.filter((b) => b.type === "tool_call"));
    assert.deepEqual(
      resume[0].content.map((b) => b.tool_call_id),
      calls.map((c) => c.id),
      "one result per call, in call order",
    );
    assert.deepEqual(resume[0].content[0].content, { ok: true, color: "blue" });
  });
});

describe("handler failures become error results", () => {
  test("a throwing handler: is_error with the message, and the run completes", async () => {
    const client = new Client({ baseUrl: base });
    client.registerToolHandler("change_background", () => {
      throw new Error("the page is read-only");
    });
    const res = await client.invoke("make the background blue", { threadId: thread("throws") });
    assert.equal(res.status, "completed");
    const [r] = results(res.messages);
    assert.equal(r.is_error, true);
    assert.equal(r.content, 'tool "change_background" failed: the page is read-only');
    assert.match(lastText(res), /The page could not change its background: .*the page is read-only/);
  });

  test("a rejected promise and a thrown non-Error are reported too", async () => {
    const client = new Client({ baseUrl: base });
    client.registerToolHandler("change_background", async () => Promise.reject("plain string"));
    client.registerToolHandler("read_clipboard", async () => {
      throw { reason: "denied" };
    });
    const res = await client.invoke("make the background blue and read my clipboard", { threadId: thread("rejects") });
    const [a, b] = results(res.messages);
    assert.equal(a.content, 'tool "change_background" failed: plain string');
    assert.equal(b.content, 'tool "read_clipboard" failed: {"reason":"denied"}');
    assert.ok(a.is_error && b.is_error);
  });

  const cyclic = { a: 1 };
  cyclic.self = cyclic;
  const unserialisable = [
    ["a function", () => () => 1, /result is a function/],
    ["a nested function", () => ({ ok: true, callback() {} }), /result\.callback is a function/],
    ["a BigInt", () => ({ n: 10n }), /result\.n is a BigInt/],
    ["a cycle", () => cyclic, /result\.self is a cycle/],
    ["undefined", () => undefined, /result is undefined/],
    ["a symbol", () => ({ s: Symbol("x") }), /result\.s is a symbol/],
    ["NaN", () => ({ items: [1, NaN] }), /result\.items\[1\] is NaN/],
    ["a Map", () => ({ m: new Map([["a", 1]]) }), /result\.m is a Map/],
  ];
  for (const [what, make, problem] of unserialisable) {
    test(`a handler returning ${what}: an error result naming the tool and the problem`, async () => {
      const client = new Client({ baseUrl: base });
      client.registerToolHandler("change_background", make);
      const res = await client.invoke("make the background blue", { threadId: thread("json") });
      assert.equal(res.status, "completed", "the thread is not stuck");
      const [r] = results(res.messages);
      assert.equal(r.is_error, true);
      assert.match(r.content, /^tool "change_background" returned a result that is not JSON-serialisable: /);
      assert.match(r.content, problem);
    });
  }

  test("JSON that merely looks unusual passes: shared references, Dates, nested undefined, null", async () => {
    const client = new Client({ baseUrl: base });
    const shared = { x: 1 };
    client.registerToolHandler("change_background", () => ({
      a: shared,
      b: shared,
      when: new Date(0),
      gone: undefined,
      list: [undefined, null],
    }));
    const res = await client.invoke("make the background blue", { threadId: thread("json-ok") });
    const [r] = results(res.messages);
    assert.equal(r.is_error, false);
    assert.deepEqual(r.content, { a: { x: 1 }, b: { x: 1 }, when: "1970-01-01T00:00:00.000Z", list: [null, null] });
  });
});

describe("missing handlers", () => {
  test("default: an error result naming the missing handler", async () => {
    const client = new Client({ baseUrl: base });
    const res = await client.invoke("what is on my clipboard?", { threadId: thread("missing") });
    assert.equal(res.status, "completed");
    const [r] = results(res.messages);
    assert.equal(r.is_error, true);
    assert.match(r.content, /no handler for remote tool "read_clipboard"/);
    assert.match(lastText(res), /I could not read your clipboard: no handler for remote tool "read_clipboard"/);
  });

  test('onMissingHandler "throw": MissingHandlerError, no handler of the round runs, the thread stays paused; resume() finishes it', async () => {
    const strict = new Client({ baseUrl: base, onMissingHandler: "throw" });
    let ran = 0;
    strict.registerToolHandler("change_background", () => {
      ran++;
      return { ok: true };
    });
    const threadId = thread("missing-throw");
    await assert.rejects(strict.invoke("make the background blue and read my clipboard", { threadId }), (err) => {
      assert.ok(err instanceof MissingHandlerError);
      assert.equal(err.toolName, "read_clipboard");
      assert.equal(err.threadId, threadId);
      assert.match(err.message, /registerToolHandler\("read_clipboard"/);
      return true;
    });
    assert.equal(ran, 0, "change_background did not run either");
    const t = await strict.getThread(threadId);
    assert.equal(t.status, "interrupted");
    assert.equal(t.remote_tool_calls.length, 2);

    strict.registerToolHandler("read_clipboard", () => ({ text: "late" }));
    const res = await strict.resume(threadId);
    assert.equal(res.status, "completed");
    assert.equal(lastText(res), "The background is now blue, and your clipboard holds: late");
    assert.equal(ran, 1);
  });
});

describe("abort", () => {
  test("aborting while a handler runs: rejects with AbortError, the handler's signal fires, the thread stays paused", async () => {
    const client = new Client({ baseUrl: base });
    const ctl = new AbortController();
    let handlerSignal;
    client.registerToolHandler("read_clipboard", (_args, { signal }) => {
      handlerSignal = signal;
      ctl.abort();
      return new Promise(() => {}); // ignores its signal: the run must not wait for it
    });
    const threadId = thread("abort");
    await assert.rejects(client.invoke("what is on my clipboard?", { threadId, signal: ctl.signal }), { name: "AbortError" });
    assert.equal(handlerSignal.aborted, true);
    const t = await client.getThread(threadId);
    assert.equal(t.status, "interrupted", "nothing was sent for the aborted call");

    const other = new Client({ baseUrl: base });
    other.registerToolHandler("read_clipboard", () => ({ text: "after abort" }));
    assert.equal(lastText(await other.resume(threadId)), "Your clipboard holds: after abort");
  });

  test("a handler that honours its signal rejects with it; the run rejects with the caller's reason", async () => {
    const client = new Client({ baseUrl: base });
    const ctl = new AbortController();
    client.registerToolHandler("read_clipboard", (_args, { signal }) => {
      setTimeout(() => ctl.abort(), 10);
      return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    });
    await assert.rejects(client.invoke("what is on my clipboard?", { threadId: thread("abort2"), signal: ctl.signal }), (err) => {
      assert.equal(err.name, "AbortError");
      assert.equal(err, ctl.signal.reason);
      return true;
    });
  });

  test("an already aborted signal: no request is sent", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    await assert.rejects(client.invoke("hello", { signal: AbortSignal.abort() }), { name: "AbortError" });
    assert.equal(sent.length, 0);
  });

  test("aborting a request in flight cancels the fetch", async () => {
    const ctl = new AbortController();
    let fetchSignal;
    const client = new Client({
      baseUrl: base,
      fetch: (url, init) => {
        fetchSignal = init.signal;
        setTimeout(() => ctl.abort(), 10);
        return new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
      },
    });
    await assert.rejects(client.invoke("hello", { signal: ctl.signal }), { name: "AbortError" });
    assert.equal(fetchSignal.aborted, true);
  });

  test("abort during a stream: the iterator throws AbortError; breaking out aborts the handlers' signals", async () => {
    const client = new Client({ baseUrl: base });
    let handlerSignal;
    client.registerToolHandler("read_clipboard", (_a, { signal }) => {
      handlerSignal = signal;
      return new Promise(() => {});
    });
    const seen = [];
    for await (const ev of client.stream("what is on my clipboard?", { threadId: thread("stream-break") })) {
      seen.push(ev.type);
      if (ev.type === "tool_handler_started") break;
    }
    assert.equal(seen.at(-1), "tool_handler_started");
    assert.equal(handlerSignal.aborted, true, "leaving the loop cancels the handler");

    const ctl = new AbortController();
    await assert.rejects(
      (async () => {
        for await (const ev of client.stream("hello", { threadId: thread("stream-abort"), signal: ctl.signal })) {
          if (ev.type === "run_started") ctl.abort();
        }
      })(),
      { name: "AbortError" },
    );
  });
});

describe("HTTP errors", () => {
  test("an unknown thread: TenxgraphError 404 thread_not_found", async () => {
    const client = new Client({ baseUrl: base });
    await assert.rejects(client.getThread("no-such-thread"), (err) => {
      assert.ok(err instanceof TenxgraphError);
      assert.equal(err.status, 404);
      assert.equal(err.code, "thread_not_found");
      assert.match(err.message, /no-such-thread/);
      return true;
    });
  });

  test("new input on a paused thread: 409 pending_calls with the call ids", async () => {
    const client = new Client({ baseUrl: base, maxRounds: 0 });
    const threadId = thread("conflict");
    await assert.rejects(client.invoke("what is on my clipboard?", { threadId }), MaxRoundsError);
    const { remote_tool_calls } = await client.getThread(threadId);
    await assert.rejects(client.invoke("hello", { threadId }), (err) => {
      assert.ok(err instanceof TenxgraphError);
      assert.equal(err.status, 409);
      assert.equal(err.code, "pending_calls");
      assert.deepEqual(err.callIds, remote_tool_calls.map((c) => c.id));
      return true;
    });
    await client.deleteThread(threadId);
    await assert.rejects(client.getThread(threadId), { status: 404 });
  });

  test("a malformed message: 400 malformed_request, also from stream", async () => {
    const client = new Client({ baseUrl: base });
    const bad = [{ role: "user", content: [{ type: "picture" }] }];
    await assert.rejects(client.invoke(bad), { name: "TenxgraphError", status: 400, code: "malformed_request" });
    await assert.rejects(async () => {
      for await (const _ of client.stream(bad));
    }, { name: "TenxgraphError", status: 400, code: "malformed_request" });
  });

  test("no server: TenxgraphError network_error, status 0", async () => {
    const client = new Client({ baseUrl: "http://127.0.0.1:9" });
    await assert.rejects(client.invoke("hello"), { name: "TenxgraphError", status: 0, code: "network_error" });
  });

  test("a non-JSON error body keeps the status", async () => {
    const client = new Client({ baseUrl: base, fetch: async () => new Response("<html>bad gateway</html>", { status: 502, statusText: "Bad Gateway" }) });
    await assert.rejects(client.invoke("hello"), (err) => {
      assert.equal(err.status, 502);
      assert.equal(err.code, "http_502");
      assert.match(err.message, /HTTP 502 Bad Gateway: <html>bad gateway/);
      return true;
    });
  });
});

describe("auth", () => {
  let secured;
  before(async () => {
    secured = await startServer({
      edit: (cfg) => (cfg.server = { auth: { tokens_env: ["TENXGRAPH_CLIENT_TEST_TOKEN"] } }),
      env: { TENXGRAPH_CLIENT_TEST_TOKEN: "s3cret-token" },
    });
  });
  after(async () => {
    await secured?.stop();
  });

  test("without a key or with a wrong one: TenxgraphError 401 unauthorized", async () => {
    for (const apiKey of [undefined, "wrong"]) {
      const client = new Client({ baseUrl: secured.base, apiKey });
      await assert.rejects(client.invoke("hello"), (err) => {
        assert.ok(err instanceof TenxgraphError);
        assert.equal(err.status, 401);
        assert.equal(err.code, "unauthorized");
        return true;
      });
    }
  });

  test("with apiKey: the whole loop works, streamed too", async () => {
    const client = new Client({ baseUrl: secured.base, apiKey: "s3cret-token" });
    client.registerToolHandler("read_clipboard", () => ({ text: "authorised" }));
    const res = await client.invoke("what is on my clipboard?");
    assert.equal(lastText(res), "Your clipboard holds: authorised");
    let end;
    for await (const ev of client.stream("what is on my clipboard?")) if (ev.type === "end") end = ev.data;
    assert.equal(end.status, "completed");
    assert.equal((await client.getThread(res.thread_id)).status, "completed");
  });
});

describe("stream", () => {
  test("events in order: the server's, the handler's, then the resumed run's, ending completed", async () => {
    const client = new Client({ baseUrl: base });
    client.registerToolHandler("read_clipboard", () => ({ text: "streamed" }));
    const threadId = thread("stream");
    const events = [];
    const gen = client.stream("what is 2+3*4 and what is on my clipboard?", { threadId });
    let step;
    while (!(step = await gen.next()).done) events.push(step.value);
    const final = step.value;

    const types = events.map((e) => e.type);
    const idx = (type, from = 0) => types.indexOf(type, from);
    const firstEnd = idx("end");
    assert.equal(types[0], "run_started");
    assert.equal(events[0].data.resumed, false);
    assert.ok(idx("tool_started") < idx("tool_finished"), "the server tool ran");
    assert.equal(events[idx("tool_started")].data.name, "calculator");
    assert.ok(idx("tool_finished") < idx("interrupted"));
    assert.equal(idx("interrupted") + 1, firstEnd, "interrupted, then end");
    assert.equal(events[firstEnd].data.status, "interrupted");
    assert.equal(types[firstEnd + 1], "tool_handler_started");
    assert.deepEqual(events[firstEnd + 1].data, {
      thread_id: threadId,
      id: events[firstEnd].data.remote_tool_calls[0].id,
      name: "read_clipboard",
      arguments: {},
    });
    assert.equal(types[firstEnd + 2], "tool_handler_finished");
    assert.deepEqual(events[firstEnd + 2].data.result.content, { text: "streamed" });
    assert.equal(typeof events[firstEnd + 2].data.duration_ms, "number");
    assert.equal(types[firstEnd + 3], "run_started");
    assert.equal(events[firstEnd + 3].data.resumed, true);
    assert.ok(types.indexOf("text_delta", firstEnd) > firstEnd, "model text streams");
    assert.equal(types.at(-1), "end");
    assert.equal(types.filter((t) => t === "end").length, 2, "one end per round");
    assert.equal(events.at(-1).data.status, "completed");
    assert.deepEqual(final, events.at(-1).data, "the generator returns the last end's data");
    const text = events.filter((e) => e.type === "text_delta" && e.data.message_id === events.at(-2).data.id).map((e) => e.data.text).join("");
    assert.equal(text, "2+3*4 = 14. Your clipboard holds: streamed");
    assert.equal(lastText(final), text);
  });

  test("parallel handlers: both start before either finishes; finished events in completion order", async () => {
    const client = new Client({ baseUrl: base });
    client.registerToolHandler("change_background", async ({ color }) => {
      await sleep(40);
      return { ok: true, color };
    });
    client.registerToolHandler("read_clipboard", () => ({ text: "fast" }));
    const handlerEvents = [];
    for await (const ev of client.stream("make the background blue and read my clipboard", { threadId: thread("stream-par") })) {
      if (ev.type.startsWith("tool_handler_")) handlerEvents.push(`${ev.type.slice(13)} ${ev.data.name}`);
    }
    assert.deepEqual(handlerEvents, [
      "started change_background",
      "started read_clipboard",
      "finished read_clipboard",
      "finished change_background",
    ]);
  });
});

describe("loop guard", () => {
  test("maxRounds 0 against the server: MaxRoundsError before any handler runs; the thread stays paused", async () => {
    const client = new Client({ baseUrl: base, maxRounds: 0 });
    let ran = 0;
    client.registerToolHandler("read_clipboard", () => ran++);
    const threadId = thread("guard");
    await assert.rejects(client.invoke("what is on my clipboard?", { threadId }), (err) => {
      assert.ok(err instanceof MaxRoundsError);
      assert.equal(err.maxRounds, 0);
      assert.equal(err.threadId, threadId);
      assert.deepEqual(err.pendingCalls.map((c) => c.name), ["read_clipboard"]);
      assert.match(err.message, /maxRounds \(0\)/);
      return true;
    });
    assert.equal(ran, 0);
    assert.equal((await client.getThread(threadId)).status, "interrupted");
  });

  test("a model that never stops calling tools: the default guard stops after 25 rounds", async () => {
    let requests = 0;
    const endless = async (url, init) => {
      requests++;
      const { config } = JSON.parse(init.body);
      const call = { type: "remote_tool_call", id: `call_${requests}`, name: "get_page_info", arguments: {}, node: "tools" };
      const body = { thread_id: config.thread_id, run_id: `r${requests}`, status: "interrupted", messages: [], remote_tool_calls: [call] };
      return Response.json(body);
    };
    const client = new Client({ baseUrl: "http://tenxgraph.invalid", fetch: endless });
    let handled = 0;
    client.registerToolHandler("get_page_info", () => ({ n: ++handled }));
    await assert.rejects(client.invoke("loop forever"), (err) => {
      assert.ok(err instanceof MaxRoundsError);
      assert.equal(err.maxRounds, 25);
      return true;
    });
    assert.equal(handled, 25);
    assert.equal(requests, 26);
  });
});

describe("client options and SSE parsing", () => {
  test("bad options are refused at construction", () => {
    assert.throws(() => new Client({}), TypeError);
    assert.throws(() => new Client({ baseUrl: base, maxRounds: -1 }), /maxRounds/);
    assert.throws(() => new Client({ baseUrl: base, onMissingHandler: "ignore" }), /onMissingHandler/);
    const client = new Client({ baseUrl: base });
    const off = client.registerToolHandler("read_clipboard", () => null);
    assert.throws(() => client.registerToolHandler("read_clipboard", () => null), /already registered/);
    assert.deepEqual(client.toolHandlerNames(), ["read_clipboard"]);
    off();
    assert.deepEqual(client.toolHandlerNames(), []);
    assert.throws(() => client.registerToolHandler("x", "not a function"), TypeError);
  });

  // sse builds a streamed response from chunks split at awkward places.
  function sse(chunks) {
    const enc = new TextEncoder();
    const body = new ReadableStream({
      start(c) {
        for (const chunk of chunks) c.enqueue(enc.encode(chunk));
        c.close();
      },
    });
    return async () => new Response(body, { headers: { "Content-Type": "text/event-stream" } });
  }
  const end = { thread_id: "t", run_id: "r", status: "completed", messages: [], remote_tool_calls: [] };

  test("CRLF and CR line ends, chunks split mid-line and mid-CRLF, comments, multi-line data", async () => {
    const endJSON = JSON.stringify(end);
    const client = new Client({
      baseUrl: "http://x.invalid",
      fetch: sse([
        ": keep-alive\r\n\r",
        "\nevent: text_de",
        'lta\r\ndata: {"node":"model","message_id":"m",\r\ndata: "text":"a\\nb"}\r\r',
        "event:end\ndata:" + endJSON.slice(0, 10),
        endJSON.slice(10) + "\n\n",
      ]),
    });
    const events = [];
    for await (const ev of client.stream("x")) events.push(ev);
    assert.deepEqual(events, [
      { type: "text_delta", data: { node: "model", message_id: "m", text: "a\nb" } },
      { type: "end", data: end },
    ]);
  });

  test("an error event is thrown as TenxgraphError; a stream without end is an error", async () => {
    const failing = new Client({
      baseUrl: "http://x.invalid",
      fetch: sse(['event: run_started\ndata: {"thread_id":"t","run_id":"r","resumed":false}\n\n', 'event: error\ndata: {"error":{"code":"step_limit","message":"too many steps"}}\n\n']),
    });
    const seen = [];
    await assert.rejects(async () => {
      for await (const ev of failing.stream("x")) seen.push(ev.type);
    }, { name: "TenxgraphError", status: 0, code: "step_limit", message: "too many steps" });
    assert.deepEqual(seen, ["run_started"]);

    const cut = new Client({ baseUrl: "http://x.invalid", fetch: sse(['event: run_started\ndata: {"thread_id":"t","run_id":"r","resumed":false}\n\n']) });
    await assert.rejects(async () => {
      for await (const _ of cut.stream("x"));
    }, { code: "stream_incomplete" });
  });
});
