// What the page's tests share: a real dexd on port 0 (the binary cargo built, or DEXD_BINARY)
// with a fresh data directory, Debian's Chromium driven by playwright-core, and REST calls made
// as another client would (with test keys only, never real ones).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { privateKeyToAccount } from "viem/accounts";

const here = dirname(fileURLToPath(import.meta.url));
export const repository = resolve(here, "../..");

/** Test keys (never real ones) and their addresses. */
export const ALICE_KEY = "0x" + "a1".repeat(32);
export const BOB_KEY = "0x" + "b2".repeat(32);
export const CAROL_KEY = "0x" + "c3".repeat(32);

export function chromiumPath() {
  for (const candidate of [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"]) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  throw new Error("Chromium is missing: scripts/install-test-tools installs Debian's chromium");
}

/** The dexd binary cargo built (or DEXD_BINARY). */
export function dexdBinary() {
  const binary = process.env.DEXD_BINARY ?? join(process.env.CARGO_TARGET_DIR ?? join(repository, "target"), "debug", "dexd");
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run cargo build -p dexd first`);
  return binary;
}

/** Starts dexd on the embedded configuration, or on `config` (a TOML file) when given. */
export async function startDexd({ work = mkdtempSync(join(tmpdir(), "dexd-page-")), listen = "127.0.0.1:0", config = null, demo = false, adminToken = null } = {}) {
  const configuration = config ? ["--config", config] : [];
  if (demo) configuration.push("--demo");
  // With an operator's token, the admin API on a port of its own.
  if (adminToken) configuration.push("--admin-listen", "127.0.0.1:0");
  const child = spawn(dexdBinary(), ["serve", "--listen", listen, "--data-dir", join(work, "data"), ...configuration], {
    stdio: ["ignore", "pipe", "pipe"],
    env: adminToken ? { ...process.env, DEXD_ADMIN_TOKEN: adminToken } : process.env,
  });
  let log = "";
  child.stdout.on("data", (chunk) => (log += chunk));
  child.stderr.on("data", (chunk) => (log += chunk));
  const started = Date.now();
  let address = null;
  while (!address) {
    const match = /address=([0-9.:]+)/.exec(log);
    if (match && log.includes("dexd ready")) address = match[1];
    else if (child.exitCode !== null || Date.now() - started > 30_000) throw new Error(`dexd did not start:\n${log}`);
    else await new Promise((done) => setTimeout(done, 50));
  }
  const url = `http://${address}`;
  const adminAddress = /dexd admin listening address=([0-9.:]+)/.exec(log)?.[1] ?? null;
  const halt = async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      await new Promise((done) => child.once("exit", done));
    }
  };
  return {
    url,
    log: () => log,
    /** Stops the process (a graceful stop: streams get 1001), keeping its data. */
    halt,
    /** Starts it again on the same address and data. */
    restart: () => startDexd({ work, listen: address, config, demo, adminToken }),
    /** A call of the operator's API (started with `adminToken`). */
    async admin(path, body) {
      const response = await fetch(`http://${adminAddress}${path}`, {
        method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${adminToken}` },
        body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (!response.ok) throw new Error(`${path}: ${JSON.stringify(answer)}`);
      return answer;
    },
    async stop() {
      await halt();
      rmSync(work, { recursive: true, force: true });
    },
    async get(path, query = {}) {
      const response = await fetch(`${url}${path}?${new URLSearchParams(query)}`);
      const body = await response.json();
      if (!response.ok) throw new Error(`${path}: ${JSON.stringify(body)}`);
      return body;
    },
    async post(path, body) {
      const response = await fetch(`${url}${path}`, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
      });
      const answer = await response.json();
      if (!response.ok) throw new Error(`${path}: ${JSON.stringify(answer)}`);
      return answer;
    },
  };
}

export async function launchBrowser() {
  return chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
}

/**
 * Opens the page with spies: console errors and page errors, and every request and WebSocket
 * frame the page sends (to prove no key leaves it).
 */
export async function openPage(browser, url, viewport = { width: 1440, height: 1000 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const consoleErrors = [];
  const sent = [];
  page.on("console", (message) => {
    if (message.type() === "error") consoleErrors.push(message.text());
  });
  page.on("pageerror", (error) => consoleErrors.push(String(error)));
  const failedResponses = [];
  page.on("response", (response) => {
    if (response.status() >= 400) failedResponses.push(`${response.status()} ${response.url()}`);
  });
  page.on("request", (request) => sent.push(`${request.method()} ${request.url()}\n${request.postData() ?? ""}`));
  page.on("websocket", (socket) => socket.on("framesent", (frame) => sent.push(`WS ${String(frame.payload)}`)));
  await page.goto(`${url}/#1/ETH/USDC`);
  await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
  return { page, context, consoleErrors, failedResponses, sent };
}

/** A limit order on chain 1's ETH/USDC placed through REST as another client would, with `key`. */
export function restOrder(dexd, key, direction, price, amount) {
  return dexd.post("/order/addOrder", {
    chainId: "1", symbol: "ETH/USDC", type: "limit", direction, price, amount, privateKey: key,
  });
}

/** Another client's market on chain 1, through REST with test keys: Bob sells, Carol buys, one trade. */
export async function seedMarket(dexd) {
  const order = (key, direction, price, amount) => restOrder(dexd, key, direction, price, amount);
  const bob = privateKeyToAccount(BOB_KEY).address;
  const carol = privateKeyToAccount(CAROL_KEY).address;
  await dexd.post("/portfolio/deposit", { chainId: "1", from: bob, symbol: "ETH", quantity: "50", privateKey: BOB_KEY });
  await dexd.post("/portfolio/deposit", { chainId: "1", from: carol, symbol: "USDC", quantity: "500000", privateKey: CAROL_KEY });
  for (const [price, amount] of [["2500", "1"], ["2510", "0.5"], ["2520", "2"]]) await order(BOB_KEY, "sell", price, amount);
  for (const [price, amount] of [["2490", "1"], ["2480", "3"]]) await order(CAROL_KEY, "buy", price, amount);
  await order(CAROL_KEY, "buy", "2500", "0.4");
}

/** The rows of a table body as arrays of cell texts. */
export async function rows(page, selector) {
  return page.$$eval(`${selector} tbody tr`, (trs) =>
    trs.filter((tr) => !tr.querySelector("td.empty")).map((tr) => [...tr.cells].map((td) => td.textContent.trim())),
  );
}
