/** TWAP orders through the TypeScript client against a real dexd (contract version 5): started
 * once however often it is sent, its first slice placed at once and streamed with `twapId`,
 * cancelled with the compiled-in `CancelTwap` type. */

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { ApiError, DexdClient, keySigner, type Order, type WebSocketConstructor } from "../src/index.js";
import { startDexd, stop } from "./server.js";

const freshKey = () => `0x${randomBytes(32).toString("hex")}`;

test("a TWAP starts once, streams its first slice with twapId and is cancelled once", async () => {
  const server = await startDexd();
  try {
    const seller = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await seller.deposit("ETH", "5");
    await seller.addOrder({ symbol: "ETH/USDC", direction: "sell", price: "2000", amount: "2" });
    const buyer = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await buyer.deposit("USDC", "10000");

    const stream = buyer.stream({ WebSocket: WebSocket as unknown as WebSocketConstructor });
    await stream.connect();
    const streamed: Order[] = [];
    stream.subscribe("orders", {}, (message) => {
      const orders = (message as unknown as { event: string; orders?: Order[] }).orders ?? [];
      if ((message as unknown as { event: string }).event === "update") streamed.push(...orders);
    });
    await new Promise((resolve) => setTimeout(resolve, 200));

    const terms = { symbol: "ETH/USDC", direction: "buy" as const, amount: "1", durationMs: 300_000, intervalMs: 30_000, limitPrice: "2000", clientTwapId: "ts-dca" };
    const twap = await buyer.addTwap(terms);
    assert.deepEqual([twap.status, twap.slicesPlanned, twap.limitPrice], ["running", 10, "2000"]);
    assert.equal((await buyer.addTwap(terms)).twapId, twap.twapId);
    await assert.rejects(buyer.addTwap({ ...terms, amount: "2" }), (error: unknown) => error instanceof ApiError && error.code === "DUPLICATE_CLIENT_TWAP_ID");

    const deadline = Date.now() + 10_000;
    while (!streamed.some((order) => order.twapId === twap.twapId) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    stream.close();
    const slice = streamed.find((order) => order.twapId === twap.twapId);
    assert.ok(slice, JSON.stringify(streamed));
    assert.deepEqual([slice.amount, slice.timeInForce, slice.status, slice.signature], ["0.1", "IOC", "filled", ""]);
    assert.equal((await buyer.twaps())[0].filled, "0.1");

    const cancelled = await buyer.cancelTwap(twap.twapId);
    assert.equal(cancelled.status, "cancelled");
    await assert.rejects(buyer.cancelTwap(twap.twapId), (error: unknown) => error instanceof ApiError && error.code === "TWAP_NOT_RUNNING");
  } finally {
    await stop(server);
  }
});
