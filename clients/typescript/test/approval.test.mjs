// Approval requests through @tenxgraph/client against a real `tenxgraph
// serve` whose calculator needs approval: the handler approves or denies,
// and a client without a handler denies with a clear reason.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "../dist/index.js";
import { startServer } from "./_server.mjs";

let server;
let n = 0;
const thread = (name) => `${name}-${process.pid}-${++n}`;

before(async () => {
  server = await startServer({ edit: (cfg) => (cfg.builtin_tools.require_approval = ["calculator"]) });
});

after(async () => {
  await server?.stop();
});

const results = (res) => res.messages.flatMap((m) => m.content.filter((b) => b.type === "tool_result"));

test("an approving handler sees the call and the tool runs once", async () => {
  const seen = [];
  const client = new Client({ baseUrl: server.base, onApproval: (req, ctx) => (seen.push({ req, threadId: ctx.threadId }), true) });
  const threadId = thread("approve");
  const events = [];
  let res;
  const it = client.stream("what is 2+3*4", { threadId });
  for (;;) {
    const { value, done } = await it.next();
    if (done) {
      res = value;
      break;
    }
    events.push(value);
  }
  assert.equal(res.status, "completed");
  assert.equal(seen.length, 1);
  assert.equal(seen[0].req.type, "approval_request");
  assert.equal(seen[0].req.name, "calculator");
  assert.equal(seen[0].threadId, threadId);
  const rs = results(res);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].is_error, false);
  assert.ok(events.some((e) => e.type === "approval_requested" && e.data.name === "calculator"), "the stream reports the request");
});

test("a denying handler's reason reaches the model, and the tool never runs", async () => {
  const client = new Client({ baseUrl: server.base, onApproval: () => ({ approved: false, reason: "not on a Sunday" }) });
  const res = await client.invoke("what is 2+3*4", { threadId: thread("deny") });
  assert.equal(res.status, "completed");
  const rs = results(res);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].is_error, true);
  assert.match(JSON.stringify(rs[0].content), /not on a Sunday/);
});

test("without an approval handler the call is denied, saying why", async () => {
  const client = new Client({ baseUrl: server.base });
  const res = await client.invoke("what is 2+3*4", { threadId: thread("none") });
  const rs = results(res);
  assert.equal(rs.length, 1);
  assert.equal(rs[0].is_error, true);
  assert.match(JSON.stringify(rs[0].content), /no approval handler/);
});

test("a handler that throws denies the call with the error", async () => {
  const client = new Client({ baseUrl: server.base, onApproval: () => { throw new Error("policy service down"); } });
  const res = await client.invoke("what is 2+3*4", { threadId: thread("throws") });
  const rs = results(res);
  assert.equal(rs[0].is_error, true);
  assert.match(JSON.stringify(rs[0].content), /policy service down/);
});
