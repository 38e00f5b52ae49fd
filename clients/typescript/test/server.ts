/** A real `dexd serve` for the tests: the binary cargo built (or `DEXD_BINARY`), on a given or a
 * free port, over a data directory that can outlive it (to start it again on the same journal). */

import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const REPOSITORY = resolve(import.meta.dirname, "../../../..");

export function dexdBinary(): string {
  if (process.env.DEXD_BINARY) return process.env.DEXD_BINARY;
  const target = process.env.CARGO_TARGET_DIR ?? join(REPOSITORY, "target");
  return join(target, "debug", "dexd");
}

export interface RunningDexd { url: string; listen: string; dataDir: string; process: ChildProcess }

/** Starts dexd on `listen` (default a free port) over `dataDir` (default a new one). */
export function startDexd(listen = "127.0.0.1:0", dataDir = join(mkdtempSync(join(tmpdir(), "dexd-ts-")), "data")): Promise<RunningDexd> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(dexdBinary(), ["serve", "--listen", listen, "--data-dir", dataDir], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    let address: string | undefined;
    child.stdout!.on("data", (chunk: Buffer) => {
      output += chunk.toString();
      address ??= /address=([0-9.:]+)/.exec(output)?.[1];
      if (address && output.includes("dexd ready")) {
        resolvePromise({ url: `http://${address}`, listen: address, dataDir, process: child });
      }
    });
    child.on("exit", (code) => reject(new Error(`dexd exited (${code}) before it was ready:\n${output}`)));
  });
}

export function stop(server: RunningDexd, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  return new Promise((done) => {
    if (server.process.exitCode !== null) return done();
    server.process.once("exit", () => done());
    server.process.kill(signal);
  });
}
