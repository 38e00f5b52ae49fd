// The committed bundle (crates/dexd/page, which the binary embeds) is what the sources build:
// type-check, build into a temporary folder with the pinned packages, compare byte for byte. And
// the page's weight: its JavaScript and CSS together under 200 KB gzipped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import { repository } from "./harness.mjs";

const web = join(repository, "web");
const committed = join(repository, "crates/dexd/page");
/** The page's budget: JavaScript and CSS, gzipped. */
const MAX_GZIPPED_BYTES = 200 * 1024;

function files(folder) {
  const found = [];
  const walk = (path) => {
    for (const name of readdirSync(path)) {
      const full = join(path, name);
      if (statSync(full).isDirectory()) walk(full);
      else found.push(relative(folder, full));
    }
  };
  walk(folder);
  return found.sort();
}

test("the committed bundle is what the sources build", () => {
  execFileSync(join(web, "node_modules/.bin/tsc"), ["--noEmit", "-p", web], { cwd: web, stdio: "pipe" });
  const out = mkdtempSync(join(tmpdir(), "dexd-page-build-"));
  try {
    execFileSync(join(web, "node_modules/.bin/vite"), ["build", "--logLevel", "error"], {
      cwd: web, stdio: "pipe", env: { ...process.env, DEXD_PAGE_OUT_DIR: out },
    });
    assert.deepEqual(files(committed), files(out), "the same files (run `npm run build` in web/ and commit)");
    for (const name of files(out)) {
      assert.ok(readFileSync(join(out, name)).equals(readFileSync(join(committed, name))),
        `${name} is stale: run \`npm run build\` in web/ and commit crates/dexd/page`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the page's JavaScript and CSS weigh under 200 KB gzipped", () => {
  let gzipped = 0;
  for (const name of files(committed).filter((name) => /\.(js|css)$/.test(name))) {
    gzipped += gzipSync(readFileSync(join(committed, name)), { level: 9 }).length;
  }
  console.log(`page weight: ${(gzipped / 1024).toFixed(1)} KiB of JavaScript and CSS, gzipped`);
  assert.ok(gzipped > 10_000 && gzipped < MAX_GZIPPED_BYTES, `${gzipped} bytes`);
});
