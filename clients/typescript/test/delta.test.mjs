// response: "delta" and paged getThread against a real `tenxgraph serve` on
// the quickstart config: a client that keeps its transcript and appends what
// each call added holds the thread the server holds, whether it invokes,
// streams or resumes; the requests say "delta"; getThread pages.

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { Client, TenxgraphError, appendDelta } from "../dist/index.js";
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

function recordingFetch(sent) {
  return async (url, init) => {
    sent.push({ url: String(url), method: init.method, body: init.body ? JSON.parse(init.body) : undefined });
    return fetch(url, init);
  };
}

describe("response: delta", () => {
  test("invoke, stream and resume: the transcript built from deltas is the thread", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    client.registerToolHandler("read_clipboard", () => ({ text: "delta words" }));
    client.registerToolHandler("change_background", (args) => ({ ok: true, color: args.color }));
    const threadId = thread("delta");
    let transcript = [];

    // Two rounds (a pause and its resume) in one call: one delta.
    const first = await client.invoke("what is 2+3*4 and what is on my clipboard?", { threadId, response: "delta" });
    assert.equal(first.status, "completed");
    assert.equal(first.offset, 0);
    assert.equal(first.messages[0].role, "user");
    transcript = appendDelta(transcript, first);
    assert.deepEqual(transcript, (await client.getThread(threadId)).messages);

    // Streamed: every end event carries its round's messages at its offset.
    const ends = [];
    const gen = client.stream("make the background blue", { threadId, response: "delta" });
    let step;
    while (!(step = await gen.next()).done) {
      if (step.value.type === "end") ends.push(step.value.data);
    }
    const second = step.value;
    assert.ok(ends.length >= 2, `a paused stream ends twice, got ${ends.length}`);
    assert.equal(ends[0].offset, transcript.length);
    for (let i = 1; i < ends.length; i++) assert.equal(ends[i].offset, ends[i - 1].offset + ends[i - 1].messages.length);
    assert.equal(second.offset, transcript.length);
    assert.deepEqual(second.messages, ends.flatMap((e) => e.messages));
    transcript = appendDelta(transcript, second);

    const t = await client.getThread(threadId);
    assert.deepEqual(transcript, t.messages);

    // Every run request asked for a delta; getThread was not paged.
    const runs = sent.filter((r) => r.method === "POST");
    assert.ok(runs.length >= 4);
    for (const r of runs) assert.equal(r.body.config.response, "delta", JSON.stringify(r.body));

    // A transcript that missed a turn is refused, not silently joined.
    assert.throws(() => appendDelta(transcript.slice(1), second), RangeError);
    assert.throws(() => appendDelta(transcript, { ...second, offset: undefined }), TypeError);
  });

  test("resume of a paused thread with response delta carries only the resumed rounds", async () => {
    const strict = new Client({ baseUrl: base, onMissingHandler: "throw" });
    const threadId = thread("delta-resume");
    await assert.rejects(strict.invoke("what is on my clipboard?", { threadId }));
    const paused = await strict.getThread(threadId);
    assert.equal(paused.status, "interrupted");

    const client = new Client({ baseUrl: base });
    client.registerToolHandler("read_clipboard", () => ({ text: "resumed words" }));
    const res = await client.resume(threadId, { response: "delta" });
    assert.equal(res.status, "completed");
    assert.equal(res.offset, paused.messages.length);
    assert.deepEqual(appendDelta(paused.messages, res), (await client.getThread(threadId)).messages);
  });

  test("the default stays the full thread", async () => {
    const client = new Client({ baseUrl: base });
    const threadId = thread("full");
    await client.invoke("hello", { threadId });
    const res = await client.invoke("hello again", { threadId });
    assert.equal(res.offset, undefined);
    assert.deepEqual(res.messages, (await client.getThread(threadId)).messages);
    assert.ok(res.messages.length >= 4);
  });

  test("a bad response option is refused before any request", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    await assert.rejects(client.invoke("hello", { response: "partial" }), TypeError);
    assert.equal(sent.length, 0);
  });
});

describe("getThread paging", () => {
  test("after and limit walk the thread once, in order", async () => {
    const client = new Client({ baseUrl: base });
    const threadId = thread("pages");
    for (const text of ["hello", "hello again", "and again"]) await client.invoke(text, { threadId });
    const all = (await client.getThread(threadId)).messages;
    const got = [];
    let page = await client.getThread(threadId, { limit: 2 });
    for (;;) {
      assert.equal(page.offset, got.length);
      assert.equal(page.total, all.length);
      assert.ok(page.messages.length <= 2);
      got.push(...page.messages);
      if (!page.has_more) break;
      page = await client.getThread(threadId, { after: page.messages.at(-1).id, limit: 2 });
    }
    assert.deepEqual(got, all);
  });

  test("a bad paging value is a TenxgraphError naming the parameter", async () => {
    const client = new Client({ baseUrl: base });
    const threadId = thread("bad-page");
    await client.invoke("hello", { threadId });
    await assert.rejects(client.getThread(threadId, { limit: 0 }), (err) => {
      assert.ok(err instanceof TenxgraphError);
      assert.equal(err.status, 422);
      assert.match(err.message, /limit/);
      return true;
    });
    await assert.rejects(client.getThread(threadId, { after: "no-such-message" }), (err) => {
      assert.equal(err.status, 422);
      assert.match(err.message, /after/);
      return true;
    });
  });
});

describe("durability", () => {
  test("every request of a run carries it, and the thread reads the same", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    client.registerToolHandler("read_clipboard", () => ({ text: "durable words" }));
    const exitThread = thread("durability-exit");
    const syncThread = thread("durability-sync");
    const asyncThread = thread("durability-async");
    const exit = await client.invoke("what is 2+3*4 and what is on my clipboard?", { threadId: exitThread, durability: "exit" });
    const sync = await client.invoke("what is 2+3*4 and what is on my clipboard?", { threadId: syncThread });
    const asyncRun = await client.invoke("what is 2+3*4 and what is on my clipboard?", { threadId: asyncThread, durability: "async" });
    assert.equal(exit.status, "completed");
    assert.equal(asyncRun.status, "completed");
    const runs = sent.filter((r) => r.method === "POST");
    const exitRuns = runs.filter((r) => r.body.config.thread_id === exitThread);
    assert.ok(exitRuns.length >= 2, `a pause and its resume, got ${exitRuns.length} requests`);
    for (const r of exitRuns) assert.equal(r.body.config.durability, "exit", JSON.stringify(r.body));
    for (const r of runs.filter((r) => r.body.config.thread_id === syncThread)) assert.equal(r.body.config.durability, undefined, JSON.stringify(r.body));
    const asyncRuns = runs.filter((r) => r.body.config.thread_id === asyncThread);
    assert.ok(asyncRuns.length >= 2, `a pause and its resume, got ${asyncRuns.length} requests`);
    for (const r of asyncRuns) assert.equal(r.body.config.durability, "async", JSON.stringify(r.body));
    const shape = (ms) => ms.map((m) => [m.role, JSON.stringify(m.content).replace(/call_[\w-]+/g, "ID").replace(/"expires_at":"[^"]*"/g, "")]);
    assert.deepEqual(shape(exit.messages), shape(sync.messages));
    assert.deepEqual(shape(asyncRun.messages), shape(sync.messages));
  });

  test("an unknown mode is refused before any request", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    await assert.rejects(client.invoke("hello", { threadId: thread("durability-bad"), durability: "eventually" }), TypeError);
    assert.equal(sent.length, 0);
  });
});
