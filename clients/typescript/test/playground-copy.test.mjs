// The playground serves a committed copy of the compiled client
// (host/server/playground/client.js). `npm test` builds first, so this
// compares the copy with a fresh build: they must never drift.

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, existsSync } from "node:fs";
import { copyFile, copyPath, expectedCopy } from "../scripts/copy-playground.mjs";

test("the playground's client.js is the freshly built client", () => {
  assert.ok(existsSync(copyFile), `${copyPath} is missing: run npm run build:playground in clients/typescript`);
  const committed = readFileSync(copyFile, "utf8");
  assert.ok(
    committed === expectedCopy(),
    `${copyPath} differs from a fresh build of clients/typescript: run npm run build:playground there and commit the result`,
  );
});
