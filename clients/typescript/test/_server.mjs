// Starts a real `tenxgraph serve` on the quickstart config for a test file:
// a temp copy of examples/quickstart with its SQLite store in a temp dir,
// listening on 127.0.0.1:0. TENXGRAPH_BIN names the binary (scripts/test.sh
// builds it); without it the binary is built once per process with go build.

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, copyFileSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

let built;

function binary() {
  if (process.env.TENXGRAPH_BIN) return process.env.TENXGRAPH_BIN;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "tenxgraph-bin-"));
    built = join(dir, "tenxgraph");
    execFileSync("go", ["build", "-o", built, "./cmd/tenxgraph"], { cwd: repo, stdio: "inherit" });
  }
  return built;
}

/**
 * Starts a server. `edit(cfg)` may change the quickstart config; `env` is
 * added to the server's environment. Resolves to { base, stop, log }.
 */
export async function startServer({ edit, env } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "tenxgraph-client-"));
  const quickstart = join(repo, "examples", "quickstart");
  copyFileSync(join(quickstart, "script.json"), join(dir, "script.json"));
  const cfg = JSON.parse(readFileSync(join(quickstart, "10xgraph.json"), "utf8"));
  cfg.checkpointer = { type: "sqlite", path: join(dir, "state.db") };
  edit?.(cfg);
  writeFileSync(join(dir, "10xgraph.json"), JSON.stringify(cfg));
  const child = spawn(binary(), ["serve", "--config", join(dir, "10xgraph.json"), "--addr", "127.0.0.1:0"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let log = "";
  child.stderr.on("data", (chunk) => {
    log += chunk;
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? signal)));
  const base = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/(\S+)/);
      if (m) resolve(`http://${m[1]}`);
    });
    exited.then((code) => reject(new Error(`tenxgraph serve exited with ${code} before listening:\n${log}`)));
  });
  return {
    base,
    get log() {
      return log;
    },
    async stop() {
      child.kill("SIGTERM");
      const code = await exited;
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`tenxgraph serve exited with ${code} on SIGTERM:\n${log}`);
    },
  };
}
