/** The TypeScript client against a real dexd: a session signed locally (no key in any request),
 * and a book stream that survives a server killed and started again, and a lost update. */

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { createWalletClient, custom, decodeFunctionData, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ApiError, DexdClient, DexdStream, NATIVE_TOKEN, VAULT_REQUEST_ABI, bookChecksum, keySigner, walletSigner, type Level, type Placed, type StreamBook, type WebSocketConstructor } from "../src/index.js";
import { startDexd, stop } from "./server.js";

const freshKey = () => `0x${randomBytes(32).toString("hex")}`;

/** A fetch that records every request it sends. */
function recordingFetch(sent: string[]): typeof fetch {
  return async (input, init) => {
    sent.push(`${String(input)}\n${typeof init?.body === "string" ? init.body : ""}`);
    return fetch(input, init);
  };
}

test("a session signed locally: deposit, orders, batch, amend, cancels, and no key sent", async () => {
  const server = await startDexd();
  try {
    const sent: string[] = [];
    const key = freshKey();
    const trader = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(key), fetch: recordingFetch(sent) });
    const { balance } = await trader.deposit("USDC", "100000");
    assert.equal(balance.available, "100000");
    const placed = await trader.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "2000.50", amount: "0.5", clientOrderId: "ts-1" });
    assert.equal(placed.order.status, "open");
    assert.equal(placed.order.price, "2000.5");
    const batch = await trader.batchOrders([
      { symbol: "ETH/USDC", direction: "buy", price: "1990", amount: "0.1" },
      { symbol: "ETH/USDC", direction: "buy", price: "1", amount: "0.0000001" },
    ]);
    assert.ok("order" in batch[0], JSON.stringify(batch[0]));
    assert.ok("error" in batch[1], "an order below the pair's minimum is refused alone");
    // Signed once: the placed order's proof covers both orders the client signed.
    const detail = await trader.orderDetail((batch[0] as Placed).order.orderId);
    assert.equal(detail.batch?.index, 0);
    assert.equal(detail.batch?.orderHashes.length, 2);
    assert.equal(detail.batch?.signature, (batch[0] as Placed).order.signature);
    const amended = await trader.amendOrder("ETH/USDC", placed.order.orderId, { price: "2001" });
    assert.equal(amended.price, "2001");
    const cancelled = await trader.cancelOrder("ETH/USDC", amended.orderId);
    assert.equal(cancelled.status, "cancelled");
    const rest = await trader.cancelAll("ETH/USDC");
    assert.equal(rest.length, 1);
    assert.deepEqual(await trader.openOrders("ETH/USDC"), []);
    // The amended order, the one cancelled, and the batch's: three in all.
    assert.equal((await trader.cancelledOrders("ETH/USDC")).length, 3);
    // A refusal is an ApiError with the contract's code.
    await assert.rejects(
      trader.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "2000", amount: "1000" }),
      (error: unknown) => error instanceof ApiError && error.status === 422 && error.code === "INSUFFICIENT_BALANCE",
    );
    await assert.rejects(
      new DexdClient({ baseUrl: server.url, chainId: "99999" }).pairs(),
      (error: unknown) => error instanceof ApiError && error.code === "UNKNOWN_CHAIN",
    );
    // The key signed everything here and went nowhere.
    for (const request of sent) {
      assert.ok(!request.toLowerCase().includes(key.slice(2)), "a request carried the key");
      assert.ok(!request.includes("privateKey"), "a request carried privateKey");
    }
  } finally {
    await stop(server);
  }
});

function restBookOf(bids: Level[], asks: Level[]): StreamBook {
  return {
    bids: new Map(bids.map((level) => [level.price, level])),
    asks: new Map(asks.map((level) => [level.price, level])),
    sequence: 0,
  };
}

/** Waits until the stream's book of `pair` is the REST book (same levels, same checksum). */
async function untilBookIsRest(stream: DexdStream, client: DexdClient, pair: string, timeoutMs: number): Promise<StreamBook> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const book = stream.books.get(pair);
    if (book) {
      const rest = await client.orderBook(pair, 25).catch(() => undefined);
      if (rest && rest.sequence === book.sequence && bookChecksum(book) === bookChecksum(restBookOf(rest.bids, rest.asks))) {
        return book;
      }
    }
    if (Date.now() > deadline) throw new Error(`the stream's book of ${pair} never matched REST`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

test("a book stream survives a server killed and started again, and a lost update", async () => {
  let server = await startDexd();
  const statuses: string[] = [];
  const resyncs: string[] = [];
  let reconnected = 0;
  const stream = new DexdStream({
    baseUrl: server.url, chainId: "1", WebSocket: WebSocket as unknown as WebSocketConstructor, initialBackoffMs: 100,
    onStatus: (status) => { if (statuses.at(-1) !== status) statuses.push(status); },
    onResync: (_id, reason) => resyncs.push(reason),
    onReconnected: () => { reconnected += 1; },
  });
  try {
    const trader = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await trader.deposit("USDC", "100000");
    await trader.addOrder({ symbol: "WBTC/USDC", direction: "buy", price: "20000", amount: "0.01" });
    await stream.connect();
    const snapshots: number[] = [];
    const bookSubscription = stream.subscribe("book", { pair: "WBTC/USDC", depth: 25 }, (message) => {
      if (message.event === "snapshot") snapshots.push(Number(message.sequence));
    });
    await untilBookIsRest(stream, trader, "WBTC/USDC", 10_000);

    // Killed at once, started again on the same port and journal.
    await stop(server, "SIGKILL");
    server = await startDexd(server.listen, server.dataDir);
    for (let index = 1; index <= 3; index++) {
      await trader.addOrder({ symbol: "WBTC/USDC", direction: "buy", price: String(20000 + index), amount: "0.01" });
    }
    const book = await untilBookIsRest(stream, trader, "WBTC/USDC", 30_000);
    assert.ok(stream.reconnects >= 1);
    assert.equal(book.bids.size, 4);
    assert.equal(book.bids.get("20001")?.orders, 1, "each level with its order count");
    assert.equal(stream.book(bookSubscription), book, "the same book by its subscription");

    // An update lost on the way: the stream's sequence falls one behind; it takes the book again.
    stream.books.get("WBTC/USDC")!.sequence -= 1;
    await trader.addOrder({ symbol: "WBTC/USDC", direction: "buy", price: "19999", amount: "0.01" });
    await untilBookIsRest(stream, trader, "WBTC/USDC", 10_000);
    assert.equal(stream.resyncs, 1);
    assert.deepEqual(resyncs, ["gap"]);
    assert.deepEqual(statuses, ["connecting", "live", "reconnecting", "live"]);
    assert.equal(reconnected, 1);
    assert.equal(snapshots.length, 3, "the first, after the restart, after the gap");

    // Ended: no more of its messages, its book forgotten.
    const trades: unknown[] = [];
    stream.subscribe("trades", { pair: "WBTC/USDC" }, (message) => trades.push(message));
    stream.unsubscribe(bookSubscription);
    assert.equal(stream.books.has("WBTC/USDC"), false);
    await trader.addOrder({ symbol: "WBTC/USDC", direction: "buy", price: "19998", amount: "0.01" });
    const seller = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await seller.deposit("WBTC", "1");
    await seller.addOrder({ symbol: "WBTC/USDC", direction: "sell", price: "19998", amount: "0.01" });
    for (let waited = 0; !trades.some((message) => (message as { event: string }).event === "update") && waited < 5_000; waited += 50) {
      await new Promise((done) => setTimeout(done, 50));
    }
    assert.ok(trades.length >= 2, "the trades subscription heard the trade");
    assert.equal(snapshots.length, 3);
    assert.equal(stream.books.has("WBTC/USDC"), false, "no book message of the ended subscription was taken");
  } finally {
    stream.close();
    await stop(server);
  }
});

test("an account's reads, custody, the public journal, and a wallet client that signs", async () => {
  const server = await startDexd();
  try {
    // A wallet as a page meets it: EIP-1193 requests, typed data signed by the wallet's own key.
    const walletKey = privateKeyToAccount(freshKey() as Hex);
    const asked: string[] = [];
    const wallet = createWalletClient({
      transport: custom({
        async request({ method, params }: { method: string; params?: unknown }) {
          asked.push(method);
          if (method !== "eth_signTypedData_v4") throw new Error(`the wallet does not do ${method}`);
          const [address, text] = params as [string, string];
          assert.equal(address, walletKey.address);
          const typedData = JSON.parse(text);
          const { EIP712Domain: _domain, ...types } = typedData.types;
          return walletKey.signTypedData({ domain: typedData.domain, types, primaryType: typedData.primaryType, message: typedData.message });
        },
      }),
    });
    const trader = new DexdClient({ baseUrl: server.url, chainId: "1", signer: walletSigner(wallet, walletKey.address.toLowerCase()) });
    assert.equal(trader.address, walletKey.address, "the wallet's address, checksummed");
    await trader.deposit("USDC", "10000");
    await trader.deposit("ETH", "2");
    const maker = await trader.addOrder({ symbol: "ETH/USDC", direction: "sell", price: "2500", amount: "1" });
    await trader.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "2500", amount: "0.4" });
    await trader.withdraw("USDC", "1");
    assert.deepEqual(asked, Array(5).fill("eth_signTypedData_v4"));

    // Self-trade: the arriving buy cancels the resting sell instead of filling against it.
    assert.equal((await trader.order(maker.order.orderId)).cancelReason, "selfTrade");
    const other = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await other.deposit("USDC", "10000");
    await trader.addOrder({ symbol: "ETH/USDC", direction: "sell", price: "2500", amount: "1" });
    await other.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "2500", amount: "0.4" });
    const fills = await trader.accountTrades("ETH/USDC");
    assert.equal(fills.length, 1);
    assert.equal(fills[0].role, "maker");
    const { position } = await trader.position("ETH/USDC");
    assert.equal(position.netAmount, "-0.4");
    const tradable = (await trader.tradable()).find((item) => item.symbol === "ETH/USDC");
    assert.equal(tradable?.sell.maxAmount, "1", "2 ETH, 0.4 sold, 0.6 locked");
    assert.equal((await trader.deposits(undefined, { limit: 1 })).length, 1, "the list's limit is sent");
    assert.equal((await trader.deposits()).length, 2);
    assert.equal((await trader.withdrawals())[0].quantity, "1");
    assert.equal((await other.filledOrders(undefined, undefined, { limit: 5 })).length, 1, "the buy that filled");
    const limits = await trader.rateLimits();
    assert.equal(limits.openOrders, 1);
    assert.deepEqual(await trader.agents(), []);

    // Custody and liabilities on a ledger chain: nothing on chain, no roots.
    const reserves = await trader.reserves();
    assert.equal(reserves.custody.mode, "ledger");
    assert.equal(reserves.assets.find((asset) => asset.symbol === "USDC")?.onChain, null);
    assert.equal((await trader.custody()).roots, null);
    assert.deepEqual(await trader.liabilityRoots(), []);
    assert.deepEqual(await trader.auditRoots(), []);
    await assert.rejects(trader.liabilityProof(), (error: unknown) => error instanceof ApiError && error.code === "ROOT_NOT_FOUND");
    await assert.rejects(trader.liabilityLeaves(0), (error: unknown) => error instanceof ApiError && error.status === 404);

    // The public journal: the chain's configuration first, then every command with its signature.
    const page = await trader.auditJournal(1, 3);
    assert.equal(page.formatVersion, "2");
    assert.equal(page.lines.length, 3);
    assert.deepEqual(page.lines.map((line) => line.sequence), [1, 2, 3]);
    assert.ok(page.end !== null && page.end >= 9, `the journal's end: ${page.end}`);
    const first = page.lines[0];
    assert.ok("command" in first && first.command.type === "configure");
    await assert.rejects(trader.auditJournal(1, 10_001), (error: unknown) => error instanceof ApiError && error.code === "INVALID_PARAMETER");
  } finally {
    await stop(server);
  }
});

test("a vault withdrawal with more decimals than its token has is refused before it is signed", async () => {
  // A vault chain's answers, served from memory: the withdrawal is signed in the token's units.
  const posted: string[] = [];
  const answers: Record<string, unknown> = {
    "/account/eip712": { domain: { name: "dexd", version: "1", chainId: 31337, verifyingContract: "0x" + "11".repeat(20) },
      types: {}, primaryTypes: { withdraw: "Withdrawal" }, maxLifetimeMs: 3_600_000 },
    "/account/assetsInfo": { assets: [{ symbol: "USDC", name: "USD Coin", decimals: 6, address: "0x" + "22".repeat(20), native: false }],
      custody: { mode: "vault" } },
  };
  const fakeFetch: typeof fetch = async (input, init) => {
    const url = new URL(String(input));
    if (init?.method === "POST") posted.push(url.pathname);
    return new Response(JSON.stringify(answers[url.pathname] ?? {}), { status: 200, headers: { "content-type": "application/json" } });
  };
  const trader = new DexdClient({ baseUrl: "http://venue.invalid", chainId: "31337", signer: keySigner(freshKey()), fetch: fakeFetch });
  await assert.rejects(
    trader.withdraw("USDC", "1.1234567"),
    (error: unknown) => error instanceof ApiError && error.code === "INVALID_PARAMETER" && error.field === "quantity",
  );
  assert.deepEqual(posted, [], "nothing was sent");
});

test("the global fetch is called as a browser's must be, on the global object", async () => {
  // A browser's fetch throws "Illegal invocation" when called with any `this` but the window.
  const original = globalThis.fetch;
  const answered: string[] = [];
  globalThis.fetch = function (this: unknown, input: RequestInfo | URL) {
    if (this !== undefined && this !== globalThis) throw new TypeError("Illegal invocation");
    answered.push(String(input));
    return Promise.resolve(new Response(JSON.stringify({ chains: [] }), { status: 200 }));
  } as typeof fetch;
  try {
    assert.deepEqual(await new DexdClient({ baseUrl: "http://venue.invalid", chainId: "1" }).chains(), []);
    assert.deepEqual(answered, ["http://venue.invalid/chains"]);
  } finally {
    globalThis.fetch = original;
  }
});

test("a withdrawal asked for on chain is the vault's requestWithdrawal, sent by the account's wallet", async () => {
  const vault = "0x5FbDB2315678afecb367f032d93F642f64180aa3";
  const usdc = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512";
  const assetsInfo = {
    chainId: "31337",
    assets: [
      { symbol: "ETH", name: "Ether", decimals: 18, address: null, native: true },
      { symbol: "USDC", name: "USD Coin", decimals: 6, address: usdc, native: false },
    ],
    custody: { mode: "vault", vault, operator: vault, confirmations: 2, crediting: "running", haltReason: null },
  };
  const answering: typeof fetch = async () => new Response(JSON.stringify(assetsInfo), { headers: { "content-type": "application/json" } });
  const client = new DexdClient({ baseUrl: "http://venue.invalid", chainId: "31337", fetch: answering });
  const sent: { to: string; data: Hex }[] = [];
  const wallet = { sendTransaction: async (transaction: { to: `0x${string}`; data: Hex }) => { sent.push(transaction); return `0x${"ab".repeat(32)}` as Hex; } };
  const hash = await client.requestWithdrawalOnChain(wallet, "usdc", "12.5");
  assert.equal(hash, `0x${"ab".repeat(32)}`);
  assert.equal(sent[0].to, vault);
  const { functionName, args } = decodeFunctionData({ abi: VAULT_REQUEST_ABI, data: sent[0].data });
  assert.equal(functionName, "requestWithdrawal");
  assert.deepEqual(args, [usdc, 12_500_000n]);
  // The native asset is the zero address; more decimals than the token has are refused.
  await client.requestWithdrawalOnChain(wallet, "ETH", "0.5");
  assert.deepEqual(decodeFunctionData({ abi: VAULT_REQUEST_ABI, data: sent[1].data }).args, [NATIVE_TOKEN, 5n * 10n ** 17n]);
  await assert.rejects(
    client.requestWithdrawalOnChain(wallet, "USDC", "1.0000001"),
    (error: unknown) => error instanceof ApiError && error.code === "INVALID_PARAMETER" && error.field === "quantity",
  );
  assert.equal(sent.length, 2);
});
