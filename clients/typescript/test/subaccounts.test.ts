/** Subaccounts through the TypeScript client against a real dexd (contract version 5): a client
 * bound once to a subaccount trades, reads and streams as it and never as the owner; its address
 * is the venue's; a transfer is answered once however often it is sent; an agent bound to a
 * subaccount trades there and never transfers. */

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { privateKeyToAccount } from "viem/accounts";
import { ApiError, DexdClient, keySigner, subaccountAddress, type WebSocketConstructor } from "../src/index.js";
import { startDexd, stop } from "./server.js";

const freshKey = () => `0x${randomBytes(32).toString("hex")}`;

test("a client bound to a subaccount trades, reads and streams as it", async () => {
  const server = await startDexd();
  try {
    const key = freshKey();
    const owner = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(key) });
    await owner.deposit("USDC", "5000");
    const moved = await owner.transfer("USDC", "1500", 0, 4, "fund-4");
    const bound = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(key), subaccount: 4 });
    // The client's address of subaccount 4 is the venue's.
    assert.equal(bound.address, moved.to);
    assert.notEqual(bound.address, owner.address);
    assert.equal(bound.owner, owner.address);
    assert.deepEqual((await owner.subaccounts()).map((item) => [item.subaccount, item.address]), [[0, owner.address], [4, bound.address]]);

    const stream = bound.stream({ WebSocket: WebSocket as unknown as WebSocketConstructor });
    await stream.connect();
    const messages: Array<Record<string, unknown>> = [];
    stream.subscribe("orders", {}, (message) => messages.push(message as unknown as Record<string, unknown>));
    const placed = await bound.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "1000", amount: "1" });
    assert.equal(placed.order.account, bound.address);
    const balance = (await bound.balances()).find((item) => item.symbol === "USDC");
    assert.equal(balance?.locked, "1000");
    assert.equal((await owner.balances()).find((item) => item.symbol === "USDC")?.locked, "0");
    assert.deepEqual((await bound.openOrders()).map((order) => order.orderId), [placed.order.orderId]);
    assert.deepEqual(await owner.openOrders(), []);
    const deadline = Date.now() + 10_000;
    while (!messages.some((message) => message.event === "update") && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    stream.close();
    const update = messages.find((message) => message.event === "update");
    assert.ok(update, JSON.stringify(messages));
    assert.equal(update.account, bound.address);

    // Sent again: the first result, and nothing moves.
    assert.deepEqual(await bound.transfer("USDC", "1500", 0, 4, "fund-4"), moved);
    await assert.rejects(
      bound.transfer("USDC", "1", 0, 4, "fund-4"),
      (error: unknown) => error instanceof ApiError && error.status === 409 && error.code === "TRANSFER_ID_REUSED",
    );
    assert.equal((await bound.balances()).find((item) => item.symbol === "USDC")?.total, "1500");
    assert.deepEqual((await owner.transfers()).map((item) => item.clientTransferId), ["fund-4"]);
  } finally {
    await stop(server);
  }
});

test("an agent bound to a subaccount trades there and never transfers", async () => {
  const server = await startDexd();
  try {
    const owner = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await owner.deposit("USDC", "1000");
    await owner.transfer("USDC", "500", 0, 11);
    const botKey = freshKey();
    await owner.approveAgent(privateKeyToAccount(botKey as `0x${string}`).address, "sub-11");
    const bot = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(botKey), account: owner.address, subaccount: 11 });
    assert.equal(bot.address, subaccountAddress(owner.address!, 11));
    const placed = await bot.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "100", amount: "1" });
    assert.equal(placed.order.account, bot.address);
    await assert.rejects(
      bot.transfer("USDC", "1", 11, 0),
      (error: unknown) => error instanceof ApiError && error.status === 403 && error.code === "AGENT_NOT_ALLOWED",
    );
    assert.throws(() => new DexdClient({ baseUrl: server.url, chainId: "1", subaccount: 1001 }));
  } finally {
    await stop(server);
  }
});
