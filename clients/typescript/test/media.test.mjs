// Images and files through @tenxgraph/client against a real `tenxgraph
// serve`: Files, Blobs and bytes in user messages, handlers that return
// files (the quickstart's pick_file), the server's refusals as
// TenxgraphErrors, reading blobs back, and base64 of large binaries.

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { Client, TenxgraphError, image, file, audio } from "../dist/index.js";
import { startServer } from "./_server.mjs";
import { png, wav, pdf, ref } from "./_media.mjs";

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

function lastText(res) {
  const m = res.messages.filter((m) => m.role === "assistant").at(-1);
  return m.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

function results(messages) {
  return messages.flatMap((m) => m.content.filter((b) => b.type === "tool_result"));
}

function recordingFetch(sent) {
  return async (url, init) => {
    sent.push({ url: String(url), method: init.method, body: init.body ? JSON.parse(init.body) : undefined, headers: init.headers });
    return fetch(url, init);
  };
}

async function bytesOf(blob) {
  return Buffer.from(await blob.arrayBuffer());
}

describe("media in user messages", () => {
  test("a File in the content is sent as base64, stored once, and read back with getBlob", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    const picture = png(64, 48);
    const threadId = thread("pic");
    const res = await client.invoke(
      [{ role: "user", content: ["what is in this picture?", new File([picture], "red.png", { type: "image/png" })] }],
      { threadId },
    );
    assert.equal(res.status, "completed");

    const block = sent[0].body.input.messages[0].content[1];
    assert.deepEqual(Object.keys(block).sort(), ["data", "filename", "mime_type", "type"]);
    assert.equal(block.type, "image");
    assert.equal(block.mime_type, "image/png");
    assert.equal(block.filename, "red.png");
    assert.ok(Buffer.from(block.data, "base64").equals(picture), "the data is the file's bytes");
    assert.deepEqual(sent[0].body.input.messages[0].content[0], { type: "text", text: "what is in this picture?" });

    const stored = res.messages[0].content[1];
    assert.deepEqual(stored, { type: "image", mime_type: "image/png", filename: "red.png", blob: ref(picture), size: picture.length, width: 64, height: 48 });

    const got = await client.getBlob(threadId, stored);
    assert.equal(got.type, "image/png");
    assert.ok((await bytesOf(got)).equals(picture), "getBlob gives the bytes back");
    assert.ok((await bytesOf(await client.getBlob(threadId, stored.blob))).equals(picture), "by its reference too");

    // The stored block, sent again, names its blob: no bytes travel.
    const again = await client.invoke([{ role: "user", content: ["and now?", stored] }], { threadId });
    const resent = sent.at(-1).body.input.messages[0].content[1];
    assert.equal(resent.data, undefined);
    assert.equal(resent.blob, stored.blob);
    assert.deepEqual(again.messages.at(-2).content[1], stored);
  });

  test("image(), file() and audio() read bytes and Blobs; stream() takes them too", async () => {
    const client = new Client({ baseUrl: base });
    const picture = png(3, 2, [0, 0, 255]);
    const notes = "line one\nline two\n";
    const sound = wav();
    const blocks = [
      await image(new Uint8Array(picture), { mimeType: "image/png" }),
      await file(new Blob([notes], { type: "text/plain" }), { filename: "notes.txt" }),
      await audio(sound.buffer.slice(sound.byteOffset, sound.byteOffset + sound.length), { mimeType: "audio/wav" }),
    ];
    assert.deepEqual(blocks[1], { type: "file", mime_type: "text/plain", filename: "notes.txt", data: Buffer.from(notes).toString("base64") });

    const threadId = thread("helpers");
    let end;
    for await (const ev of client.stream([{ role: "user", content: ["three things", ...blocks] }], { threadId })) {
      if (ev.type === "end") end = ev.data;
    }
    assert.equal(end.status, "completed");
    const [, img, txt, snd] = end.messages[0].content;
    assert.deepEqual(img, { type: "image", mime_type: "image/png", blob: ref(picture), size: picture.length, width: 3, height: 2 });
    assert.deepEqual(txt, { type: "file", mime_type: "text/plain", filename: "notes.txt", blob: ref(Buffer.from(notes)), size: notes.length });
    assert.equal(snd.type, "audio");
    assert.equal(snd.mime_type, "audio/wav");
    assert.equal(snd.blob, ref(sound));
    assert.equal(await (await client.getBlob(threadId, txt)).text(), notes);
    assert.ok((await bytesOf(await client.getBlob(threadId, snd))).equals(sound));
  });

  test("a MediaInput ({ mimeType, data }) and a Blob part; bytes without a type are refused before any request", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    const threadId = thread("input");
    const res = await client.invoke(
      [{ role: "user", content: [{ type: "text", text: "two" }, { mimeType: "image/png", data: png(2, 2) }, new Blob([pdf()], { type: "application/pdf" })] }],
      { threadId },
    );
    const [, a, b] = res.messages[0].content;
    assert.equal(a.type, "image");
    assert.equal(b.type, "file");
    assert.equal(b.mime_type, "application/pdf");
    assert.ok((await bytesOf(await client.getBlob(threadId, b))).equals(pdf()));

    const n = sent.length;
    await assert.rejects(client.invoke([{ role: "user", content: ["x", new Blob([png(1, 1)])] }], { threadId: thread("untyped") }), (err) => {
      assert.ok(err instanceof TypeError);
      assert.match(err.message, /^messages\[0\]\.content\[1\]: the bytes have no type: name it with mimeType/);
      return true;
    });
    await assert.rejects(client.invoke([{ role: "user", content: [new File(["x"], "a.weird")] }]), /messages\[0\]\.content\[0\]: the file "a\.weird" has no type/);
    await assert.rejects(client.invoke([{ role: "user", content: [new Uint8Array([1, 2])] }]), /messages\[0\]\.content\[0\] is bytes without a type/);
    await assert.rejects(client.invoke([{ role: "user", content: [{ mimeType: "image/png", data: "AAAA", url: "https://example.com/a.png" }] }]), /give exactly one of data, url or blob \(it has data and url\)/);
    await assert.rejects(client.invoke([{ role: "user", content: [{ text: "no type" }] }]), /messages\[0\]\.content\[0\] is an object with keys text: neither a block/);
    await assert.rejects(image(new Uint8Array(4)), /image\(\): the bytes have no type/);
    assert.equal(sent.length, n, "nothing was sent");
  });

  test("the server's refusals are TenxgraphErrors naming the block, and store nothing", async () => {
    const client = new Client({ baseUrl: base });
    const threadId = thread("refused");
    await assert.rejects(
      client.invoke([{ role: "user", content: ["look", new File([pdf()], "fake.png", { type: "image/png" })] }], { threadId }),
      (err) => {
        assert.ok(err instanceof TenxgraphError, String(err));
        assert.equal(err.status, 422);
        assert.equal(err.code, "media_refused");
        assert.match(err.message, /messages\[0\]\.content\[1\]: media refused: declared image\/png, but the bytes are application\/pdf/);
        return true;
      },
    );
    await assert.rejects(client.getThread(threadId), { code: "thread_not_found" });

    // A blob of another thread is not this thread's to name.
    const owner = thread("owner");
    const res = await client.invoke([{ role: "user", content: ["mine", new Blob([png(4, 4)], { type: "image/png" })] }], { threadId: owner });
    const stored = res.messages[0].content[1];
    await assert.rejects(client.invoke([{ role: "user", content: ["yours?", stored] }], { threadId: thread("other") }), (err) => {
      assert.equal(err.status, 422);
      assert.equal(err.code, "media_refused");
      assert.match(err.message, /messages\[0\]\.content\[1\]\.blob: .* is not a blob this thread holds/);
      return true;
    });
    await assert.rejects(client.getBlob(thread("other"), stored), { status: 404, code: "blob_not_found" });
    await assert.rejects(client.getBlob(owner, ref(Buffer.from("never sent"))), { status: 404, code: "blob_not_found" });
    await assert.rejects(client.getBlob(owner, "sha256:NOPE"), { status: 400, code: "malformed_request" });
    await assert.rejects(client.getBlob(owner, { type: "image", mime_type: "image/png", data: "AAAA" }), TypeError);
  });

  test("a block over media.max_blob_bytes is 413 media_too_large naming it", async () => {
    const small = await startServer({ edit: (cfg) => (cfg.media = { max_blob_bytes: 1024 }) });
    try {
      const client = new Client({ baseUrl: small.base });
      await assert.rejects(
        client.invoke([{ role: "user", content: ["big", await file(new Blob(["a".repeat(2048)], { type: "text/plain" }))] }], { threadId: "big" }),
        (err) => {
          assert.ok(err instanceof TenxgraphError);
          assert.equal(err.status, 413);
          assert.equal(err.code, "media_too_large");
          assert.match(err.message, /messages\[0\]\.content\[1\]/);
          return true;
        },
      );
    } finally {
      await small.stop();
    }
  });

  test("base64 of large binaries: megabytes encode without overflowing the stack, and round-trip through the server", async () => {
    const big = new Uint8Array(8 * 1024 * 1024 + 1); // not a multiple of the slice, nor of 3
    for (let i = 0; i < big.length; i += 65536) globalThis.crypto.getRandomValues(big.subarray(i, Math.min(i + 65536, big.length)));
    const t0 = performance.now();
    const block = await file(big, { mimeType: "application/octet-stream" });
    const ms = performance.now() - t0;
    assert.ok(Buffer.from(block.data, "base64").equals(Buffer.from(big)), "the base64 decodes to the bytes");
    assert.equal(block.data, Buffer.from(big).toString("base64"));
    console.log(`# base64 of 8 MiB: ${ms.toFixed(0)} ms`);

    // 2 MiB of text (under the default 4 MiB body once in base64) through
    // the server and back.
    const text = "tenxgraph ".repeat(200 * 1024);
    const client = new Client({ baseUrl: base });
    const threadId = thread("large");
    const res = await client.invoke([{ role: "user", content: ["a long file", new File([text], "long.txt", { type: "text/plain" })] }], { threadId });
    const stored = res.messages[0].content[1];
    assert.equal(stored.size, text.length);
    assert.equal(await (await client.getBlob(threadId, stored)).text(), text);
  });
});

describe("handlers that return files", () => {
  test("pick_file returns a File: its description is the content, the bytes an attachment", async () => {
    const client = new Client({ baseUrl: base });
    const notes = "remember the milk\n";
    const seen = [];
    client.registerToolHandler("pick_file", (args) => {
      seen.push(args);
      return new File([notes], "notes.txt", { type: "text/plain" });
    });
    const threadId = thread("pick");
    const res = await client.invoke("pick a file", { threadId });
    assert.equal(res.status, "completed");
    assert.deepEqual(seen, [{ prompt: "Choose a file to share with the assistant" }]);
    const [r] = results(res.messages);
    assert.equal(r.is_error, false);
    assert.deepEqual(r.content, { filename: "notes.txt", mime_type: "text/plain", size: notes.length });
    assert.deepEqual(r.attachments, [{ type: "file", mime_type: "text/plain", filename: "notes.txt", blob: ref(Buffer.from(notes)), size: notes.length }]);
    assert.equal(lastText(res), `You picked notes.txt (text/plain, ${notes.length} bytes).`);
    assert.equal(await (await client.getBlob(threadId, r.attachments[0])).text(), notes);
  });

  test("{ content, attachments }: Blobs and MediaInputs, and the content the handler chose", async () => {
    const client = new Client({ baseUrl: base });
    const picture = png(8, 8, [0, 128, 0]);
    client.registerToolHandler("pick_file", () => ({
      content: { picked: 2 },
      attachments: [new Blob([picture], { type: "image/png" }), { mimeType: "text/plain", filename: "b.txt", data: Buffer.from("bee").toString("base64") }],
    }));
    const threadId = thread("output");
    const events = [];
    for await (const ev of client.stream("choose a file", { threadId })) events.push(ev);
    const finished = events.find((e) => e.type === "tool_handler_finished");
    assert.equal(finished.data.result.attachments.length, 2, "the event carries the result as it is sent");
    const end = events.at(-1).data;
    const [r] = results(end.messages);
    assert.deepEqual(r.content, { picked: 2 });
    assert.deepEqual(r.attachments.map((a) => [a.type, a.mime_type, a.blob]), [
      ["image", "image/png", ref(picture)],
      ["file", "text/plain", ref(Buffer.from("bee"))],
    ]);
    assert.equal(r.attachments[1].filename, "b.txt");
    assert.ok((await bytesOf(await client.getBlob(threadId, r.attachments[0]))).equals(picture));
  });

  test("a file the server refuses becomes an error result: the run completes and nothing of it is stored", async () => {
    const sent = [];
    const client = new Client({ baseUrl: base, fetch: recordingFetch(sent) });
    client.registerToolHandler("pick_file", () => new File([pdf()], "photo.png", { type: "image/png" }));
    const threadId = thread("liar");
    const res = await client.invoke("pick a file", { threadId });
    assert.equal(res.status, "completed");
    const [r] = results(res.messages);
    assert.equal(r.is_error, true);
    assert.equal(r.attachments, undefined);
    assert.match(r.content, /^tool "pick_file" returned attachments the server refused: .*messages\[0\]\.content\[0\]\.attachments\[0\]: media refused: declared image\/png, but the bytes are application\/pdf/);
    assert.match(lastText(res), /^I did not get a file: tool "pick_file" returned attachments the server refused/);
    const sends = sent.filter((s) => s.body?.input.messages[0].role === "tool");
    assert.equal(sends.length, 2, "sent once with the file, once with the error result");
    assert.equal(sends[0].body.input.messages[0].content[0].attachments.length, 1);
    await assert.rejects(client.getBlob(threadId, ref(pdf())), { code: "blob_not_found" });
  });

  test("of two results, only the refused one becomes an error", async () => {
    const client = new Client({ baseUrl: base });
    const picture = png(5, 5);
    client.registerToolHandler("read_clipboard", () => ({ content: { text: "see the picture" }, attachments: [new Blob([picture], { type: "image/png" })] }));
    client.registerToolHandler("change_background", () => ({ content: { ok: true }, attachments: [new Blob(["<svg xmlns='http://www.w3.org/2000/svg'/>"], { type: "image/svg+xml" })] }));
    const threadId = thread("two");
    const res = await client.invoke("make the background blue and read my clipboard", { threadId });
    assert.equal(res.status, "completed");
    const [bg, clip] = results(res.messages);
    assert.equal(bg.is_error, true);
    assert.match(bg.content, /^tool "change_background" returned attachments the server refused: .*content\[0\]\.attachments\[0\]/);
    assert.equal(clip.is_error, false);
    assert.equal(clip.attachments[0].blob, ref(picture));
  });

  test("what cannot be sent is an error result naming it", async () => {
    const cases = [
      [() => ({ content: "x", attachments: ["a.png"] }), /^tool "pick_file" returned an attachment the client cannot send: result\.attachments\[0\] is the string "a\.png", not a File/],
      [() => new Blob(["no type"]), /^tool "pick_file" returned an attachment the client cannot send: result: the bytes have no type/],
      [() => ({ file: new Blob(["x"], { type: "text/plain" }) }), /^tool "pick_file" returned a result that is not JSON-serialisable: result\.file is a Blob, which JSON drops/],
      [() => ({ bytes: new Uint8Array(3) }), /result\.bytes is binary data, which JSON mangles/],
      [() => ({ content: { n: 1n }, attachments: [] }), /result\.content\.n is a BigInt/],
    ];
    for (const [handler, want] of cases) {
      const client = new Client({ baseUrl: base });
      client.registerToolHandler("pick_file", handler);
      const res = await client.invoke("pick a file", { threadId: thread("bad") });
      const [r] = results(res.messages);
      assert.equal(r.is_error, true, String(want));
      assert.match(r.content, want);
    }
  });
});

describe("getBlob with auth", () => {
  test("sends the client's token; without it the server answers 401", async () => {
    const secured = await startServer({
      edit: (cfg) => (cfg.server = { auth: { tokens_env: ["TENXGRAPH_MEDIA_TEST_TOKEN"] } }),
      env: { TENXGRAPH_MEDIA_TEST_TOKEN: "media-token" },
    });
    try {
      const client = new Client({ baseUrl: secured.base, apiKey: "media-token" });
      const picture = png(6, 6);
      const res = await client.invoke([{ role: "user", content: ["hi", new Blob([picture], { type: "image/png" })] }], { threadId: "auth-pic" });
      const stored = res.messages[0].content[1];
      assert.ok((await bytesOf(await client.getBlob("auth-pic", stored))).equals(picture));
      await assert.rejects(new Client({ baseUrl: secured.base }).getBlob("auth-pic", stored), { status: 401, code: "unauthorized" });
    } finally {
      await secured.stop();
    }
  });
});
