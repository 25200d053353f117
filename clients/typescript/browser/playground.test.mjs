// The playground in a real browser: Debian's chromium (/usr/bin/chromium,
// installed by scripts/test.sh, never downloaded) driven by playwright-core
// against `tenxgraph serve`. A person's round trips: ask for a blue
// background and watch change_background run in the page; copy text, ask for
// the clipboard and see the answer quote it; attach an image to a message
// and see its thumbnail read back from the thread; answer pick_file by
// choosing a file in the browser's picker. Saves screenshots to
// artifacts/ at the repository root (gitignored).

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { startServer, repo } from "../test/_server.mjs";
import { png, ref } from "../test/_media.mjs";

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

test("the playground sends an attached image and answers pick_file with the file the person chooses", async () => {
  const base = server.base;
  const page = await context.newPage();
  const outside = [];
  const problems = [];
  const blobReads = [];
  page.on("request", (r) => {
    const url = r.url();
    if (!url.startsWith(base + "/") && !url.startsWith("data:") && !url.startsWith("blob:")) outside.push(url);
    if (url.includes("/blobs/")) blobReads.push(url);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  await page.goto(base + "/");
  const box = page.getByLabel("Message", { exact: true });
  await box.waitFor();
  await page.locator("#tool-pick_file").waitFor();
  const threadId = await page.locator("#thread-id").textContent();
  const send = page.getByRole("button", { name: "Send", exact: true });

  // 1. An image attached with the Attach button goes with the message.
  const picture = png(64, 48, [20, 160, 90]);
  const attach = page.waitForEvent("filechooser");
  await page.getByRole("button", { name: "Attach…" }).click();
  await (await attach).setFiles({ name: "green.png", mimeType: "image/png", buffer: picture });
  await page.locator("#attachments li", { hasText: "green.png" }).waitFor();
  await box.fill("what is in this picture?");
  await send.click();
  await page.locator(".msg.assistant .bubble", { hasText: "scripted model" }).waitFor();
  await send.and(page.locator(":enabled")).waitFor();
  assert.equal(await page.locator("#attachments li").count(), 0, "sending clears the attachments");

  // The thumbnail is the stored image, read from the thread's blob route.
  const thumb = page.locator(".msg.user img.thumb");
  await page.waitForFunction(() => document.querySelector(".msg.user img.thumb")?.naturalWidth > 0);
  assert.equal(await thumb.evaluate((img) => [img.naturalWidth, img.naturalHeight].join("x")), "64x48");
  assert.match(await thumb.getAttribute("src"), /^blob:/);
  assert.equal(await thumb.getAttribute("data-blob"), ref(picture));
  assert.ok(blobReads.some((u) => u === `${base}/v1/threads/${threadId}/blobs/${ref(picture)}`), `blob reads: ${blobReads}`);

  let thread = await (await fetch(`${base}/v1/threads/${threadId}`)).json();
  const user = thread.messages.find((m) => m.role === "user");
  assert.deepEqual(user.content.map((b) => b.type), ["text", "image"]);
  const stored = user.content[1];
  assert.equal(stored.blob, ref(picture));
  assert.equal(stored.filename, "green.png");
  const bytes = Buffer.from(await (await fetch(`${base}/v1/threads/${threadId}/blobs/${stored.blob}`)).arrayBuffer());
  assert.ok(bytes.equals(picture), "the thread holds the image's bytes");

  // 2. pick_file: the run pauses on a button; the person clicks it and
  // chooses a file in the browser's picker.
  await box.fill("pick a file");
  await send.click();
  const choose = page.getByRole("button", { name: "Choose a file…" });
  await choose.waitFor();
  assert.match(await page.locator("#tool-pick_file .state").textContent(), /running/);
  const paused = await (await fetch(`${base}/v1/threads/${threadId}`)).json();
  assert.equal(paused.status, "interrupted");
  assert.deepEqual(paused.remote_tool_calls.map((c) => c.name), ["pick_file"]);
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, "playground-pick.png"), fullPage: true });
  const notes = Buffer.from(`notes for the assistant ${Date.now()}\n`);
  const chooser = page.waitForEvent("filechooser");
  await choose.click();
  await (await chooser).setFiles({ name: "notes.txt", mimeType: "text/plain", buffer: notes });
  await page.locator(".msg.assistant .bubble", { hasText: `You picked notes.txt (text/plain, ${notes.length} bytes).` }).waitFor();
  await send.and(page.locator(":enabled")).waitFor();
  assert.equal(await choose.count(), 0, "the button is gone once answered");
  await page.locator(".step .filechip", { hasText: "notes.txt" }).waitFor();

  thread = await (await fetch(`${base}/v1/threads/${threadId}`)).json();
  assert.equal(thread.status, "completed");
  const result = thread.messages.flatMap((m) => m.content.filter((b) => b.type === "tool_result")).at(-1);
  assert.equal(result.is_error, false);
  assert.deepEqual(result.content, { filename: "notes.txt", mime_type: "text/plain", size: notes.length });
  assert.equal(result.attachments.length, 1);
  assert.equal(result.attachments[0].blob, ref(notes));
  const picked = Buffer.from(await (await fetch(`${base}/v1/threads/${threadId}/blobs/${result.attachments[0].blob}`)).arrayBuffer());
  assert.ok(picked.equals(notes), "the chosen file reached the thread");

  await page.screenshot({ path: join(artifacts, "playground-media.png"), fullPage: true });

  // 3. Declining answers the call with an error the model reads.
  await box.fill("choose a file");
  await send.click();
  await page.getByRole("button", { name: "Decline" }).click();
  await page.locator(".msg.assistant .bubble", { hasText: "I did not get a file: tool \"pick_file\" failed: the person declined to choose a file" }).waitFor();

  assert.deepEqual(outside, [], "the page makes no request outside its server");
  assert.deepEqual(problems, [], "no errors in the page");
  await page.close();
});
