/** The whole market history through the TypeScript client against a real dexd (contract
 * version 5): candles paged forward from the first trade by cursor, and the trades as CSV. */

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { DexdClient, keySigner } from "../src/index.js";
import { startDexd, stop } from "./server.js";

const freshKey = () => `0x${randomBytes(32).toString("hex")}`;

test("the whole history: candles paged forward and the trades as CSV", async () => {
  const server = await startDexd();
  try {
    const maker = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    const taker = new DexdClient({ baseUrl: server.url, chainId: "1", signer: keySigner(freshKey()) });
    await maker.deposit("ETH", "1");
    await taker.deposit("USDC", "10000");
    await maker.addOrder({ symbol: "ETH/USDC", direction: "sell", price: "2000", amount: "0.5" });
    for (let index = 0; index < 3; index++) {
      await taker.addOrder({ symbol: "ETH/USDC", direction: "buy", amount: "0.01", type: "market" });
    }
    const lines = (await taker.tradesCsv("ETH/USDC")).trim().split("\n");
    assert.equal(lines[0], "tradeId,timestamp,price,amount,cost,takerDirection,makerOrderId,takerOrderId");
    assert.deepEqual(lines.slice(1).map((line) => line.split(",")[0]), ["1", "2", "3"]);
    let cursor: string | undefined;
    let trades = 0;
    do {
      const page = await taker.candlePage("ETH/USDC", "1m", { limit: 1, cursor });
      trades += page.candles.reduce((sum, candle) => sum + candle.trades, 0);
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    assert.equal(trades, 3);
  } finally {
    await stop(server);
  }
});
