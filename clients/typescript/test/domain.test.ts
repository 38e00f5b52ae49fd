/** The client signs only under dexd's domain for its own chain and venue contract, with dexd's
 * types, whatever a server publishes: a server in the middle that publishes another chain's
 * domain, another contract or another Order type gets no signature (and no write is sent). */

import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { DexdClient, keySigner, SigningRefused, type Eip712 } from "../src/index.js";
import { startDexd, stop } from "./server.js";

const freshKey = () => `0x${randomBytes(32).toString("hex")}`;

/** A server in front of `upstream` that rewrites the signing description it forwards, and counts the writes it sees. */
async function tamperingProxy(upstream: string, tamper: (eip712: Eip712) => void): Promise<{ url: string; writes: string[]; close(): void }> {
  const writes: string[] = [];
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method === "POST") writes.push(request.url ?? "");
    const answer = await fetch(`${upstream}${request.url}`, {
      method: request.method,
      headers: { "content-type": request.headers["content-type"] ?? "application/json" },
      body: request.method === "POST" ? Buffer.concat(chunks) : undefined,
    });
    let text = await answer.text();
    if (request.url?.startsWith("/account/eip712")) {
      const eip712 = JSON.parse(text) as Eip712;
      tamper(eip712);
      text = JSON.stringify(eip712);
    }
    response.writeHead(answer.status, { "content-type": "application/json" });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, writes, close: () => server.close() };
}

test("a server publishing another chain's domain, another contract or other types gets no signature", async () => {
  const dexd = await startDexd();
  try {
    const key = freshKey();
    const honest = new DexdClient({ baseUrl: dexd.url, chainId: "1", signer: keySigner(key) });
    await honest.deposit("USDC", "100");
    const { domain } = await honest.eip712();
    const tampers: Array<[string, (eip712: Eip712) => void]> = [
      ["another chain", (eip712) => { eip712.domain.chainId = 42161; }],
      ["another contract", (eip712) => { eip712.domain.verifyingContract = "0x000000000000000000000000000000000000bEEF"; }],
      ["another name", (eip712) => { eip712.domain.name = "dexd-clone"; }],
      ["another Order type", (eip712) => { eip712.types.Order = eip712.types.Order.filter((member) => member.name !== "expiresAt"); }],
    ];
    for (const [what, tamper] of tampers) {
      const proxy = await tamperingProxy(dexd.url, tamper);
      try {
        // The contract is pinned when given; the chain always.
        const client = new DexdClient({ baseUrl: proxy.url, chainId: "1", signer: keySigner(key), verifyingContract: domain.verifyingContract });
        await assert.rejects(
          client.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "1000", amount: "0.01" }),
          (error: unknown) => error instanceof SigningRefused && error.code === "DOMAIN_MISMATCH",
          what,
        );
        assert.deepEqual(proxy.writes, [], `${what}: nothing was sent`);
      } finally {
        proxy.close();
      }
    }
    // An untampered server in the middle changes nothing.
    const proxy = await tamperingProxy(dexd.url, () => {});
    try {
      const client = new DexdClient({ baseUrl: proxy.url, chainId: "1", signer: keySigner(key) });
      const placed = await client.addOrder({ symbol: "ETH/USDC", direction: "buy", price: "1000", amount: "0.01" });
      assert.equal(placed.order.status, "open");
    } finally {
      proxy.close();
    }
  } finally {
    await stop(dexd);
  }
});
