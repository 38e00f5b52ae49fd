/** The README's bot runs verbatim against a real dexd (its import pointed at the built package). */

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { startDexd, stop } from "./server.js";

test("the README's bot runs verbatim", async () => {
  const root = resolve(import.meta.dirname, "../..");
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const bot = /```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(bot, "the README has a js block");
  assert.ok(bot.split("\n").filter((line) => line.trim()).length <= 20, "the bot is at most twenty lines");
  const index = pathToFileURL(join(root, "dist/src/index.js")).href;
  const ws = pathToFileURL(join(root, "node_modules/ws/wrapper.mjs")).href;
  const file = join(mkdtempSync(join(tmpdir(), "dexd-bot-")), "bot.mjs");
  writeFileSync(file, bot.replace('"@dexd/client"', JSON.stringify(index)).replace('"ws"', JSON.stringify(ws)));
  const server = await startDexd();
  try {
    const output = await new Promise<string>((done, fail) =>
      execFile(process.execPath, [file], { env: { ...process.env, DEXD_URL: server.url }, timeout: 30_000 }, (error, stdout, stderr) =>
        error ? fail(new Error(`${error.message}\n${stderr}`)) : done(stdout)),
    );
    assert.match(output, /^best bid 1510 open 1$/m);
  } finally {
    await stop(server);
  }
});
