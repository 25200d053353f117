// The playground in a real browser: Debian's chromium (/usr/bin/chromium,
// installed by scripts/test.sh, never downloaded) driven by playwright-core
// against `tenxgraph serve`. A person's round trips: ask for a blue
// background and watch change_background run in the page; copy text, ask for
// the clipboard and see the answer quote it. Saves a screenshot to
// artifacts/playground.png at the repository root (gitignored).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { startServer, repo } from "../test/_server.mjs";

const CHROMIUM = process.env.CHROMIUM_BIN || "/usr/bin/chromium";
const artifacts = join(repo, "artifacts");

let server;
let context;
let profile;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (scripts/test.sh does)`);
  server = await startServer();
  profile = mkdtempSync(join(tmpdir(), "tenxgraph-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
});

after(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await server?.stop();
});

test("the playground runs remote tools in the browser: background, clipboard, final answers", async () => {
  const base = server.base;
  const page = context.pages()[0] ?? (await context.newPage());
  const outside = [];
  const problems = [];
  const runs = []; // the bodies of the page's run requests
  page.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith(base + "/") && !url.startsWith("data:")) outside.push(url);
    if (url === base + "/v1/graph/stream") runs.push(JSON.parse(r.postData()));
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });

  await page.goto(base + "/");
  assert.equal(await page.title(), "tenxgraph playground");
  const box = page.getByLabel("Message", { exact: true });
  await box.waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), "message", "the message box has focus");
  for (const name of ["read_clipboard", "change_background", "get_selection", "get_page_info"]) {
    await page.locator(`#tool-${name}`).waitFor();
  }
  const before = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.notEqual(before, "rgb(0, 0, 255)");

  // 1. change_background runs in the page.
  await box.fill("make the background blue");
  await page.getByRole("button", { name: "Send", exact: true }).click();
  await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === "rgb(0, 0, 255)");
  await page.locator(".msg.assistant .bubble", { hasText: "Done: the background is now blue." }).waitFor();
  await page.locator("#events li[data-type=tool_handler_finished]", { hasText: "change_background" }).waitFor();
  assert.match(await page.locator("#tool-change_background .state").textContent(), /^done in \d+ ms$/);

  // 2. read_clipboard reads what the page copied.
  const copied = `tenxgraph clipboard check ${Date.now()}`;
  await page.evaluate((text) => navigator.clipboard.writeText(text), copied);
  await box.fill("what is on my clipboard?");
  await box.press("Enter");
  await page.locator(".msg.assistant .bubble", { hasText: `Your clipboard holds: ${copied}` }).waitFor();
  await page.locator("#events li[data-type=tool_handler_finished]", { hasText: "read_clipboard" }).waitFor();
  await page.getByRole("button", { name: "Send", exact: true }).and(page.locator(":enabled")).waitFor();

  // The transcript shows the whole exchange, and the server agrees.
  const bubbles = await page.locator(".msg .bubble").allTextContents();
  assert.deepEqual(bubbles, [
    "make the background blue",
    "Done: the background is now blue.",
    "what is on my clipboard?",
    `Your clipboard holds: ${copied}`,
  ]);
  const threadId = await page.locator("#thread-id").textContent();
  const thread = await (await fetch(`${base}/v1/threads/${threadId}`)).json();
  assert.equal(thread.status, "completed");
  const results = thread.messages.flatMap((m) => m.content.filter((b) => b.type === "tool_result"));
  assert.deepEqual(results.map((r) => r.is_error), [false, false]);
  assert.deepEqual(results[1].content, { text: copied });

  // The page asked each run for what it added only, and built the
  // transcript above from those deltas; a reload reads the whole thread.
  assert.ok(runs.length >= 4, `${runs.length} run requests`);
  for (const body of runs) assert.equal(body.config.response, "delta", JSON.stringify(body));

  // The event log shows the pause → handler → resume loop in order.
  const types = await page.locator("#events li").evaluateAll((lis) => lis.map((li) => li.dataset.type));
  const i = types.lastIndexOf("interrupted");
  assert.deepEqual(types.slice(i, i + 5), ["interrupted", "end", "tool_handler_started", "tool_handler_finished", "run_started"]);
  assert.equal(types.at(-1), "end");

  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, "playground.png"), fullPage: true });

  await page.reload();
  await page.locator(".msg.assistant .bubble", { hasText: `Your clipboard holds: ${copied}` }).waitFor();
  assert.deepEqual(await page.locator(".msg .bubble").allTextContents(), bubbles, "the reloaded transcript is the one built from deltas");

  assert.deepEqual(outside, [], "the page makes no request outside its server");
  assert.deepEqual(problems, [], "no errors in the page");
});

test("the playground asks before a tool that needs approval: Approve runs it once", async () => {
  const gated = await startServer({ edit: (cfg) => (cfg.builtin_tools.require_approval = ["calculator"]) });
  try {
    const page = await context.newPage();
    const problems = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console error: ${m.text()}`);
    });
    await page.goto(gated.base + "/");
    const box = page.getByLabel("Message", { exact: true });
    await box.waitFor();
    await box.fill("what is 2+3*4");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await page.locator("#notice-text", { hasText: "The model wants to run calculator" }).waitFor();
    const threadId = await page.locator("#thread-id").textContent();
    const paused = await (await fetch(`${gated.base}/v1/threads/${threadId}`)).json();
    assert.equal(paused.status, "interrupted");
    assert.deepEqual(paused.approval_requests.map((r) => r.name), ["calculator"]);
    await page.getByRole("button", { name: "Approve", exact: true }).click();
    await page.locator(".msg.assistant .bubble", { hasText: "14" }).waitFor();
    await page.getByRole("button", { name: "Send", exact: true }).and(page.locator(":enabled")).waitFor();
    const thread = await (await fetch(`${gated.base}/v1/threads/${threadId}`)).json();
    assert.equal(thread.status, "completed");
    const results = thread.messages.flatMap((m) => m.content.filter((b) => b.type === "tool_result"));
    assert.equal(results.length, 1, "the approved calculator ran once");
    assert.equal(results[0].is_error, false);
    const types = await page.locator("#events li").evaluateAll((lis) => lis.map((li) => li.dataset.type));
    assert.ok(types.includes("approval_requested"), `events: ${types}`);
    assert.deepEqual(problems, [], "no errors in the page");
    await page.close();
  } finally {
    await gated.stop();
  }
});
