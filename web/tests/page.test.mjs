// The trading page in a real browser (Debian's Chromium through playwright-core) against a real
// dexd: it loads without a console error, shows the book and trades REST shows, follows a trade
// another client makes within a second, redraws the chart on a new interval; with a pasted test
// key it deposits, places, lists and cancels an order, shows a post-only refusal in words, and
// never sends the key; at phone width the same flow works and axe finds nothing serious; a
// market maker's controls (edit, cancel all, a session key approved as an agent and revoked).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import AxeBuilder from "@axe-core/playwright";
import { privateKeyToAccount } from "viem/accounts";
import { ALICE_KEY, CAROL_KEY, launchBrowser, openPage, restOrder, rows, seedMarket, startDexd } from "./harness.mjs";

const CHAIN = "1";
const PAIR = "ETH/USDC";
let dexd;
let browser;


before(async () => {
  dexd = await startDexd();
  browser = await launchBrowser();
  await seedMarket(dexd);
});

after(async () => {
  await browser?.close();
  await dexd?.stop();
});

async function restBook() {
  const [bids, asks] = await Promise.all([
    dexd.get("/order/buyOrderbooks", { chainId: CHAIN, pair: PAIR }),
    dexd.get("/order/sellOrderbooks", { chainId: CHAIN, pair: PAIR }),
  ]);
  const levels = (answer) => answer.levels.map((level) => [level.price, level.amount, String(level.orders)]);
  return { bids: levels(bids), asks: levels(asks).reverse(), sequence: Math.max(bids.sequence, asks.sequence) };
}

async function waitForBook(page) {
  const expected = await restBook();
  await page.waitForFunction(
    (sequence) => Number(document.getElementById("book")?.dataset.sequence) >= sequence,
    expected.sequence,
    { timeout: 5_000 },
  );
  return expected;
}

test("the page loads without errors and shows the book and trades REST shows", async () => {
  const { page, context, consoleErrors, failedResponses } = await openPage(browser, dexd.url);
  try {
    const expected = await waitForBook(page);
    assert.deepEqual(await rows(page, "#book-bids"), expected.bids);
    assert.deepEqual(await rows(page, "#book-asks"), expected.asks);
    assert.equal((await page.textContent("#spread")).trim(), "Spread 10");
    const trades = await dexd.get("/order/tradeHistories", { chainId: CHAIN, pair: PAIR });
    await page.waitForSelector(`#trades tr[data-trade-id="${trades.trades[0].tradeId}"]`);
    const shown = await rows(page, "#trades");
    assert.deepEqual(shown.map(([price, amount]) => [price, amount]), trades.trades.map((trade) => [trade.price, trade.amount]));
    assert.equal((await page.textContent("#last-price")).trim(), trades.trades[0].price);
    assert.equal((await page.textContent("#stream-status")).trim(), "live");
    assert.equal(await page.getAttribute("body", "data-signing"), "none");
    assert.equal(await page.locator("#demo-banner").isVisible(), false, "a venue without --demo shows no demo banner");
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(failedResponses, []);
  } finally {
    await context.close();
  }
});

test("a trade by another client appears within a second; a new interval redraws the chart", async () => {
  const { page, context, consoleErrors } = await openPage(browser, dexd.url);
  try {
    await waitForBook(page);
    const answer = await restOrder(dexd, CAROL_KEY, "buy", "2510", "0.25");
    const trade = answer.trades[0];
    const started = Date.now();
    await page.waitForSelector(`#trades tr[data-trade-id="${trade.tradeId}"]`, { timeout: 1_000 });
    assert.ok(Date.now() - started < 1_000);
    const first = (await rows(page, "#trades"))[0];
    assert.deepEqual(first.slice(0, 2), [trade.price, trade.amount]);
    // The book follows, and equals REST at the same sequence.
    const expected = await waitForBook(page);
    assert.deepEqual(await rows(page, "#book-asks"), expected.asks);

    const chart = page.locator("#chart");
    assert.equal(await chart.getAttribute("data-interval"), "1m");
    const oneMinute = await dexd.get("/order/tradesOHCL", { chainId: CHAIN, pair: PAIR, interval: "1m" });
    assert.equal(Number(await chart.getAttribute("data-bars")), oneMinute.candles.length);
    const canvasBefore = await page.locator("#chart").screenshot();
    await page.getByRole("button", { name: "1w", exact: true }).click();
    await page.waitForFunction(() => document.getElementById("chart")?.dataset.interval === "1w");
    const week = await dexd.get("/order/tradesOHCL", { chainId: CHAIN, pair: PAIR, interval: "1w" });
    assert.equal(Number(await chart.getAttribute("data-bars")), week.candles.length);
    assert.equal(await page.getByRole("button", { name: "1w", exact: true }).getAttribute("aria-pressed"), "true");
    await page.waitForTimeout(200);
    const canvasAfter = await page.locator("#chart").screenshot();
    assert.notDeepEqual(canvasAfter, canvasBefore, "the chart was drawn again");
    assert.deepEqual(consoleErrors, []);
  } finally {
    await context.close();
  }
});

/** Deposit, place, see, cancel, and a post-only refusal, with a pasted key; returns what was sent. */
async function signedFlow(page, key, clientOrderId) {
  const address = privateKeyToAccount(key).address;
  await page.getByLabel("Or paste a private key (kept in this page's memory only)").fill(key);
  await page.getByRole("button", { name: "Use this key" }).click();
  await page.waitForFunction(() => document.body.dataset.signing === "key");
  assert.match(await page.textContent("#signer-state"), /never stored and never sent/);
  assert.equal(await page.inputValue("#private-key").catch(() => ""), "", "the field is emptied");

  // Deposit (ledger mode: confirmed at once).
  await page.getByLabel("Asset").selectOption("USDC");
  await page.getByLabel("Quantity").fill("10000");
  await page.getByRole("button", { name: "Deposit", exact: true }).click();
  await page.waitForFunction(() => /Deposit of 10000 USDC: confirmed/.test(document.getElementById("announcer")?.textContent ?? ""));
  await page.getByRole("tab", { name: "Balances" }).click();
  await page.waitForSelector('#balances tr[data-symbol="USDC"]');
  await page.waitForFunction(() => document.querySelector('#balances tr[data-symbol="USDC"] td:nth-child(2)')?.textContent === "10000");
  const balances = await dexd.get("/account/assetBalances", { chainId: CHAIN, account: address });
  assert.equal(balances.balances.find((item) => item.symbol === "USDC").total, "10000");

  // A limit buy below the book rests.
  await page.getByRole("tab", { name: "Open orders" }).click();
  await page.getByLabel("Buy", { exact: true }).check();
  await page.getByLabel("Limit", { exact: true }).check();
  await page.getByLabel("Price").fill("2400.0");
  await page.getByLabel("Amount", { exact: true }).fill("1.5");
  await page.getByLabel("Client order id (optional)").fill(clientOrderId);
  assert.equal((await page.textContent("#preview-cost")).trim(), "3600 USDC");
  await page.getByRole("button", { name: "Place order" }).click();
  await page.waitForFunction(() => /Order open: buy 1.5 ETH\/USDC at 2400/.test(document.getElementById("announcer")?.textContent ?? ""));
  const open = await dexd.get("/order/openOrders", { chainId: CHAIN, account: address });
  assert.equal(open.orders.length, 1);
  const order = open.orders[0];
  assert.equal(order.clientOrderId, clientOrderId);
  assert.equal(order.price, "2400");
  await page.waitForSelector(`#open-orders tr[data-order-id="${order.orderId}"]`);
  await page.waitForFunction(() => /7.99 ETH|[0-9.]+ ETH \(/.test(document.getElementById("preview-max")?.textContent ?? ""));

  // A post-only order that would cross is refused, in the contract's words, in the alert.
  await page.getByLabel("Price").fill("2520");
  await page.getByLabel("Amount", { exact: true }).fill("0.1");
  await page.getByLabel("Client order id (optional)").fill("");
  await page.getByLabel("Post only").check();
  await page.getByRole("button", { name: "Place order" }).click();
  const alert = page.getByRole("alert");
  await alert.getByText(/POST_ONLY_WOULD_TAKE/).waitFor();
  assert.match(await alert.textContent(), /^Order refused: .+ \(POST_ONLY_WOULD_TAKE\)$/);
  await page.getByLabel("Post only").uncheck();

  // Cancel from the list.
  await page.locator(`#open-orders tr[data-order-id="${order.orderId}"]`).getByRole("button", { name: /^Cancel/ }).click();
  await page.waitForSelector(`#open-orders tr[data-order-id="${order.orderId}"]`, { state: "detached" });
  const cancelled = await dexd.get("/order/cancelledOrders", { chainId: CHAIN, account: address });
  assert.deepEqual(cancelled.orders.map((item) => item.orderId), [order.orderId]);
  assert.equal((await dexd.get("/order/openOrders", { chainId: CHAIN, account: address })).orders.length, 0);

  // A stop buy: a limit that waits for a trade at or above 2650 and expires in an hour, listed
  // with its trigger, then cancelled.
  await page.getByLabel("Price").fill("2700");
  await page.getByLabel("Amount", { exact: true }).fill("0.1");
  await page.getByLabel("Trigger (optional: a stop or take-profit)").fill("2650");
  await page.getByLabel("Fires when a trade prints").selectOption("above");
  await page.getByLabel("Expires").selectOption("3600000");
  await page.getByRole("button", { name: "Place order" }).click();
  await page.waitForFunction(() => /Order untriggered: buy 0.1 ETH\/USDC/.test(document.getElementById("announcer")?.textContent ?? ""));
  const [waiting] = (await dexd.get("/order/openOrders", { chainId: CHAIN, account: address })).orders;
  assert.equal(waiting.status, "untriggered");
  assert.deepEqual([waiting.triggerPrice, waiting.triggerCondition], ["2650", "above"]);
  assert.ok(waiting.expiresAt > Date.now() + 3_500_000);
  const waitingRow = page.locator(`#open-orders tr[data-order-id="${waiting.orderId}"]`);
  await waitingRow.getByText(/when a trade is above 2650/).waitFor();
  await waitingRow.getByRole("button", { name: /^Cancel/ }).click();
  await page.waitForSelector(`#open-orders tr[data-order-id="${waiting.orderId}"]`, { state: "detached" });
  await page.getByLabel("Trigger (optional: a stop or take-profit)").fill("");
  await page.getByLabel("Expires").selectOption("");
  await page.getByRole("tab", { name: "Order history" }).click();
  await page.waitForSelector(`#order-history tr[data-order-id="${order.orderId}"]`);
  await page.getByRole("tab", { name: "Transfers" }).click();
  assert.equal((await rows(page, "#transfers")).length, 1);
  return address;
}

function assertNoKeySent(sent, key) {
  assert.ok(sent.length > 10, "the spy saw the page's traffic");
  assert.ok(sent.some((text) => text.includes("/order/addOrder") && text.includes('"signature"')));
  for (const text of sent) {
    assert.ok(!text.toLowerCase().includes(key.slice(2).toLowerCase()), `a request carried the key: ${text.slice(0, 120)}`);
    assert.ok(!/privatekey/i.test(text), `a request carried a privateKey field: ${text.slice(0, 120)}`);
  }
}

test("with a pasted key: deposit, order, cancel, a post-only refusal; the key is never sent", async () => {
  const { page, context, consoleErrors, sent } = await openPage(browser, dexd.url);
  try {
    await signedFlow(page, ALICE_KEY, "page-desktop-1");
    assertNoKeySent(sent, ALICE_KEY);
    // The only console error is the browser's own note of the refused (422) request.
    assert.ok(consoleErrors.every((text) => /status of 422/.test(text)), consoleErrors.join("\n"));
  } finally {
    await context.close();
  }
});

test("at 390 px wide the same flow works and axe reports nothing serious", async () => {
  const key = "0x" + "d4".repeat(32);
  const { page, context, sent } = await openPage(browser, dexd.url, { width: 390, height: 844 });
  try {
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the screen`);
    await waitForBook(page);
    await signedFlow(page, key, "page-phone-1");
    assertNoKeySent(sent, key);
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((violation) => ["serious", "critical"].includes(violation.impact));
    assert.deepEqual(serious.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target).join(", ")}`), []);
  } finally {
    await context.close();
  }
});

test("the keyboard reaches the tabs and moves between them with the arrow keys", async () => {
  const { page, context } = await openPage(browser, dexd.url);
  try {
    await page.getByRole("tab", { name: "Open orders" }).focus();
    await page.keyboard.press("ArrowRight");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "tab-history");
    assert.equal(await page.getAttribute("#tab-history", "aria-selected"), "true");
    assert.equal(await page.isHidden("#panel-open"), true);
    await page.keyboard.press("End");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "tab-agents");
    await page.keyboard.press("ArrowRight");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "tab-open");
  } finally {
    await context.close();
  }
});

test("with an injected EIP-1193 wallet the page signs through eth_signTypedData_v4", async () => {
  // A stand-in for a browser wallet: window.ethereum answers eth_requestAccounts and forwards
  // eth_signTypedData_v4's JSON to this process, which signs it with viem as a wallet would.
  const walletKey = "0x" + "f6".repeat(32);
  const wallet = privateKeyToAccount(walletKey);
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const asked = [];
  await context.exposeFunction("testWalletSign", async (address, json) => {
    assert.equal(address, wallet.address);
    const typedData = JSON.parse(json);
    asked.push(typedData.primaryType);
    const { EIP712Domain: _domain, ...types } = typedData.types;
    return wallet.signTypedData({ domain: typedData.domain, types, primaryType: typedData.primaryType, message: typedData.message });
  });
  await context.addInitScript((address) => {
    window.ethereum = {
      async request({ method, params }) {
        if (method === "eth_requestAccounts" || method === "eth_accounts") return [address];
        if (method === "eth_signTypedData_v4") return window.testWalletSign(params[0], params[1]);
        throw new Error(`unsupported ${method}`);
      },
    };
  }, wallet.address);
  const page = await context.newPage();
  const sent = [];
  page.on("request", (request) => sent.push(request.postData() ?? ""));
  try {
    await page.goto(`${dexd.url}/#1/ETH/USDC`);
    await page.waitForSelector('body[data-ready="true"]');
    await page.getByRole("button", { name: "Connect a browser wallet" }).click();
    await page.waitForFunction(() => document.body.dataset.signing === "wallet");
    assert.match(await page.textContent("#signer-state"), /your browser wallet \(EIP-1193\)/);
    await page.getByLabel("Asset").selectOption("ETH");
    await page.getByLabel("Quantity").fill("2");
    await page.getByRole("button", { name: "Deposit", exact: true }).click();
    await page.getByText(/Deposit of 2 ETH: confirmed/).waitFor();
    await page.getByLabel("Sell", { exact: true }).check();
    await page.getByLabel("Price").fill("2600");
    await page.getByLabel("Amount", { exact: true }).fill("0.5");
    await page.getByRole("button", { name: "Place order" }).click();
    await page.getByText(/Order open: sell 0.5 ETH\/USDC at 2600/).waitFor();
    const open = await dexd.get("/order/openOrders", { chainId: CHAIN, account: wallet.address });
    assert.equal(open.orders.length, 1);
    await page.locator(`#open-orders tr[data-order-id="${open.orders[0].orderId}"]`).getByRole("button", { name: /^Cancel/ }).click();
    await page.waitForSelector(`#open-orders tr[data-order-id="${open.orders[0].orderId}"]`, { state: "detached" });
    assert.deepEqual(asked, ["Deposit", "Order", "CancelOrder"]);
    assert.ok(sent.every((body) => !body.includes(walletKey.slice(2)) && !/privatekey/i.test(body)));
  } finally {
    await context.close();
  }
});

test("after the server restarts, the page reconnects and follows new trades again", async () => {
  const { page, context } = await openPage(browser, dexd.url);
  try {
    await waitForBook(page);
    await dexd.halt();
    await page.waitForFunction(() => document.body.dataset.stream === "reconnecting", null, { timeout: 5_000 });
    // Same address, same data: the page's backoff (at most 10 s) brings it back.
    dexd = await dexd.restart();
    await page.waitForFunction(() => document.body.dataset.stream === "live", null, { timeout: 15_000 });
    await page.getByText(/Stream reconnected/).waitFor({ timeout: 5_000 });
    const answer = await restOrder(dexd, CAROL_KEY, "buy", "2520", "0.1");
    await page.waitForSelector(`#trades tr[data-trade-id="${answer.trades[0].tradeId}"]`, { timeout: 2_000 });
    const expected = await waitForBook(page);
    assert.deepEqual(await rows(page, "#book-asks"), expected.asks);
    assert.deepEqual(await rows(page, "#book-bids"), expected.bids);
  } finally {
    await context.close();
  }
});

test("edit, cancel all, and a session key that trades for the account until it is revoked", async () => {
  const key = "0x" + "e5".repeat(32);
  const address = privateKeyToAccount(key).address;
  await dexd.post("/portfolio/deposit", { chainId: CHAIN, from: address, symbol: "USDC", quantity: "10000", privateKey: key });
  const first = (await restOrder(dexd, key, "buy", "2400", "1")).order;
  await restOrder(dexd, key, "buy", "2390", "1");
  const { page, context, consoleErrors, sent } = await openPage(browser, dexd.url);
  const announced = (pattern) =>
    page.waitForFunction((source) => new RegExp(source).test(document.getElementById("announcer")?.textContent ?? ""), pattern.source);
  try {
    await page.getByLabel("Or paste a private key (kept in this page's memory only)").fill(key);
    await page.getByRole("button", { name: "Use this key" }).click();
    await page.waitForSelector(`#open-orders tr[data-order-id="${first.orderId}"]`);

    // Edit: a new price for the first order, in one step.
    await page.locator(`#open-orders tr[data-order-id="${first.orderId}"]`).getByRole("button", { name: /^Edit/ }).click();
    const dialog = page.getByRole("dialog", { name: "Edit an open order" });
    await dialog.getByLabel("New limit (quote per base)").fill("2300");
    await dialog.getByRole("button", { name: "Save" }).click();
    await announced(/Order edited: now buy 1 ETH\/USDC at 2300/);
    assert.equal(await dialog.isVisible(), false);
    await page.waitForSelector(`#open-orders tr[data-order-id="${first.orderId}"]`, { state: "detached" });
    let open = (await dexd.get("/order/openOrders", { chainId: CHAIN, account: address })).orders;
    assert.deepEqual(open.map((order) => order.price).sort(), ["2300", "2390"]);

    // Cancel all.
    await page.getByRole("button", { name: "Cancel all" }).click();
    await announced(/Cancelled all open orders: 2 order\(s\)/);
    assert.equal((await dexd.get("/order/openOrders", { chainId: CHAIN, account: address })).orders.length, 0);
    await page.waitForFunction(() => document.querySelector("#open-orders td.empty") !== null);

    // A session key: approved by the account, then signing the account's orders.
    await page.getByRole("tab", { name: "Agents" }).click();
    await page.getByRole("button", { name: "Sign orders with a session key" }).click();
    await announced(/Orders are now signed with the session key 0x[0-9a-fA-F]{40}/);
    const agents = (await dexd.get("/account/agents", { chainId: CHAIN, account: address })).agents;
    assert.equal(agents.length, 1);
    assert.equal(agents[0].name, "page-session");
    await page.waitForSelector(`#agents tr[data-agent="${agents[0].agent}"]`);
    assert.match(await page.textContent("#session-state"), /session key .* can trade, never withdraw/);
    await page.getByLabel("Buy", { exact: true }).check();
    await page.getByLabel("Limit", { exact: true }).check();
    await page.getByLabel("Price").fill("2200");
    await page.getByLabel("Amount", { exact: true }).fill("0.5");
    await page.getByRole("button", { name: "Place order" }).click();
    await announced(/Order open: buy 0.5 ETH\/USDC at 2200/);
    open = (await dexd.get("/order/openOrders", { chainId: CHAIN, account: address })).orders;
    assert.equal(open.length, 1);
    assert.equal(open[0].account, address, "the agent's order is the account's");
    // The switch, set by the session key for the account, and turned off again.
    await page.getByLabel(/Dead man's switch/).fill("4");
    await page.getByRole("button", { name: "Set the switch" }).click();
    await page.getByRole("alert").getByText(/0 \(off\) or 5 to 86400 seconds/).waitFor();
    await page.getByLabel(/Dead man's switch/).fill("600");
    await page.getByRole("button", { name: "Set the switch" }).click();
    await announced(/Every open order is cancelled at .* unless the switch is set again/);
    await page.getByLabel(/Dead man's switch/).fill("0");
    await page.getByRole("button", { name: "Set the switch" }).click();
    await announced(/The switch is off/);
    const results = await new AxeBuilder({ page }).analyze();
    const serious = results.violations.filter((violation) => ["serious", "critical"].includes(violation.impact));
    assert.deepEqual(serious.map((violation) => `${violation.id}: ${violation.nodes.map((node) => node.target).join(", ")}`), []);

    // Revoked: gone from the list and from the venue; orders are the account's own again.
    await page.locator(`#agents tr[data-agent="${agents[0].agent}"]`).getByRole("button", { name: /^Revoke/ }).click();
    await announced(/Revoked the agent/);
    assert.equal((await dexd.get("/account/agents", { chainId: CHAIN, account: address })).agents.length, 0);
    await page.waitForSelector(`#agents tr[data-agent="${agents[0].agent}"]`, { state: "detached" });
    assert.equal(await page.isVisible("#end-session"), false);
    assertNoKeySent(sent, key);
    assert.deepEqual(consoleErrors, []);
  } finally {
    await context.close();
  }
});

/** Waits for the book, pastes `key`, deposits `quantity` USDC and waits for its credit; the
 * account's address. */
async function signInAndDeposit(page, key, quantity) {
  await waitForBook(page);
  await page.getByLabel("Or paste a private key").fill(key);
  await page.getByRole("button", { name: "Use this key" }).click();
  const owner = (await page.textContent("#signer-state")).match(/0x[0-9a-fA-F]{40}/)[0];
  await page.getByLabel("Asset").selectOption("USDC");
  await page.getByLabel("Quantity").fill(quantity);
  await page.getByRole("button", { name: "Deposit", exact: true }).click();
  await page.getByText(new RegExp(`Deposit of ${quantity} USDC: confirmed`)).waitFor();
  return owner;
}

test("a subaccount: funds moved to it, an order placed and listed there, never on the account", async () => {
  const key = "0x" + "e7".repeat(32);
  const { page, context, sent } = await openPage(browser, dexd.url);
  try {
    const owner = await signInAndDeposit(page, key, "5000");
    await page.getByLabel("From subaccount").fill("0");
    await page.getByLabel("To subaccount").fill("6");
    await page.getByLabel("Token to move").selectOption("USDC");
    await page.getByLabel("How much to move").fill("1200");
    await page.getByRole("button", { name: "Move funds" }).click();
    await page.getByText(/Moved 1200 USDC from subaccount 0 to subaccount 6/).waitFor();
    await page.getByLabel("Trade and view as subaccount").fill("6");
    await page.getByLabel("Trade and view as subaccount").dispatchEvent("change");
    await page.getByText(/Trading as subaccount 6, 0x[0-9a-fA-F]{40}/).waitFor();
    const sixth = (await page.textContent("#subaccount-state")).match(/0x[0-9a-fA-F]{40}/)[0];
    assert.notEqual(sixth, owner);
    // The balances tab is not the one shown: its row is there all the same.
    await page.locator('#balances tr[data-symbol="USDC"]').getByText("1200").first().waitFor({ state: "attached" });
    await page.getByLabel("Buy", { exact: true }).check();
    await page.getByLabel("Price").fill("1000");
    await page.getByLabel("Amount", { exact: true }).fill("1");
    await page.getByRole("button", { name: "Place order" }).click();
    await page.getByText(/Order open: buy 1 ETH\/USDC at 1000/).waitFor();
    const inSixth = await dexd.get("/order/openOrders", { chainId: CHAIN, account: owner, subaccount: "6" });
    assert.equal(inSixth.orders.length, 1);
    assert.equal(inSixth.orders[0].account, sixth);
    const ofOwner = await dexd.get("/order/openOrders", { chainId: CHAIN, account: owner });
    assert.equal(ofOwner.orders.length, 0);
    await page.waitForSelector(`#open-orders tr[data-order-id="${inSixth.orders[0].orderId}"]`);
    assertNoKeySent(sent, key);
  } finally {
    await context.close();
  }
});

test("a TWAP started from the page places its first slice at once and is cancelled from its tab", async () => {
  const key = "0x" + "e9".repeat(32);
  const { page, context, sent } = await openPage(browser, dexd.url);
  try {
    const owner = await signInAndDeposit(page, key, "20000");
    const asks = (await dexd.get("/order/sellOrderbooks", { chainId: CHAIN, pair: PAIR })).levels;
    assert.ok(asks.length > 0, "the seeded market has asks");
    await page.getByLabel("Whole amount").fill("0.1");
    await page.getByLabel("Over").selectOption("300000");
    await page.getByLabel("A slice every").selectOption("30000");
    await page.getByRole("button", { name: "Start TWAP" }).click();
    await page.getByText(/TWAP started: buy 0\.1 ETH\/USDC in 10 slices, one every 30 s/).waitFor();
    const [twap] = (await dexd.get("/order/twaps", { chainId: CHAIN, account: owner })).twaps;
    assert.equal(twap.status, "running");
    // The first slice is placed at once, an order of the account marked with the TWAP.
    let slices = [];
    for (let tries = 0; tries < 100 && slices.length === 0; tries += 1) {
      const filled = await dexd.get("/order/filledOrders", { chainId: CHAIN, account: owner });
      slices = filled.orders.filter((order) => order.twapId === twap.twapId);
      if (slices.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(slices.length, 1);
    await page.getByRole("tab", { name: "TWAPs" }).click();
    const listed = page.locator(`#twaps tr[data-twap-id="${twap.twapId}"]`);
    await listed.waitFor();
    await listed.getByRole("button", { name: /Cancel the TWAP/ }).click();
    await page.getByText(/Cancelled the TWAP buy 0\.1 ETH\/USDC/).waitFor();
    await page.waitForSelector(`#twaps tr[data-twap-id="${twap.twapId}"][data-status="cancelled"]`);
    // Signed in the page, with the compiled-in Twap and CancelTwap types; the key never sent.
    assert.ok(sent.some((text) => text.includes("/order/addTwap") && text.includes('"signature"')));
    assert.ok(sent.some((text) => text.includes("/order/cancelTwap") && text.includes('"signature"')));
    for (const text of sent) assert.ok(!text.toLowerCase().includes(key.slice(2).toLowerCase()), text.slice(0, 120));
  } finally {
    await context.close();
  }
});

test("a pair the operator halts says so above the order form, and no longer once resumed", async () => {
  const operated = await startDexd({ adminToken: "page-test-operator-token-0123456789abcdef" });
  const { page, context } = await openPage(browser, operated.url);
  try {
    await page.waitForSelector("body[data-ready=true]");
    assert.equal(await page.isVisible("#pair-halted"), false);
    await operated.admin("/admin/haltPair", { chainId: CHAIN, symbol: PAIR });
    await page.getByText(`Trading on ${PAIR} is halted by the operator: only cancels are taken.`).waitFor();
    await operated.admin("/admin/resumePair", { chainId: CHAIN, symbol: PAIR });
    await page.waitForSelector("#pair-halted", { state: "hidden" });
  } finally {
    await context.close();
    await operated.stop();
  }
});
