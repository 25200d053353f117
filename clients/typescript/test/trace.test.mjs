// The trace context a caller passes to a run reaches the server on every
// request of the run (the server then continues that trace: see the host's
// trace test against a real Jaeger), and a malformed one is refused before
// anything is sent.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../dist/index.js";
import { startServer } from "./_server.mjs";

let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

test("every request of a run carries the run's traceparent and tracestate", async () => {
  const sent = [];
  const client = new Client({
    baseUrl: server.base,
    fetch: async (url, init) => {
      sent.push({ path: new URL(String(url)).pathname, headers: init.headers });
      return fetch(url, init);
    },
  });
  client.registerToolHandler("change_background", async (args) => ({ ok: true, color: args.color }));
  const res = await client.invoke([{ role: "user", content: "make the background blue" }], { traceparent, tracestate: "vendor=1" });
  assert.equal(res.status, "completed");
  assert.equal(sent.length, 2, "the invoke and the resume");
  for (const r of sent) {
    assert.equal(r.path, "/v1/graph/invoke");
    assert.equal(r.headers.traceparent, traceparent);
    assert.equal(r.headers.tracestate, "vendor=1");
  }
});

test("no traceparent: no trace headers", async () => {
  const sent = [];
  const client = new Client({ baseUrl: server.base, fetch: async (url, init) => (sent.push(init.headers), fetch(url, init)) });
  await client.invoke([{ role: "user", content: "hello" }]);
  assert.ok(sent.length >= 1);
  for (const h of sent) assert.ok(!("traceparent" in h) && !("tracestate" in h), JSON.stringify(h));
});

test("a malformed traceparent, or a tracestate alone, is refused before anything is sent", async () => {
  let calls = 0;
  const client = new Client({ baseUrl: server.base, fetch: async () => (calls++, new Response("{}")) });
  for (const bad of ["", "00-abc-def-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", traceparent.toUpperCase(), "01-" + traceparent.slice(3) + "-x"]) {
    await assert.rejects(client.invoke([{ role: "user", content: "hi" }], { traceparent: bad }), TypeError, bad);
  }
  await assert.rejects(client.invoke([{ role: "user", content: "hi" }], { tracestate: "vendor=1" }), /traceparent/);
  assert.equal(calls, 0);
});
