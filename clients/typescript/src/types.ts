/** The contract's objects (shared/CONTRACT.md, "Objects"), as the server sends them. */

export interface Level { price: string; amount: string; orders: number }
export interface Trade {
  tradeId: string; chainId: string; symbol: string; price: string; amount: string; cost: string;
  takerDirection: "buy" | "sell"; makerOrderId: string; takerOrderId: string; timestamp: number;
}
export interface Order {
  orderId: string; clientOrderId: string | null; chainId: string; account: string; symbol: string;
  type: "limit" | "market"; direction: "buy" | "sell"; timeInForce: "GTC" | "IOC" | "FOK"; postOnly: boolean;
  price: string | null; amount: string; filled: string; remaining: string; cost: string; average: string | null;
  fee: string; feeAsset: string; status: "open" | "filled" | "cancelled" | "untriggered";
  /** Why it was cancelled (null unless it was). */
  cancelReason: "user" | "selfTrade" | "unfilled" | "switch" | "oco" | "expired" | null;
  /** A trigger order's trigger (null for an order without one). */
  triggerPrice: string | null; triggerCondition: "above" | "below" | null;
  /** Its one-cancels-other group, and when it expires (ms), or null. */
  ocoGroup: string | null; expiresAt: number | null;
  timestamp: number; updatedAt: number;
  signature: string;
}
export interface Balance { symbol: string; total: string; available: string; locked: string }
export interface Transfer {
  id: string; chainId: string; account: string; symbol: string; quantity: string;
  status: "pending" | "sent" | "confirmed" | "failed"; txHash: string | null; blockNumber: number | null;
  timestamp: number; updatedAt: number;
}
export interface Candle {
  openTime: number; open: string; high: string; low: string; close: string; volume: string;
  quoteVolume: string; trades: number;
}
export interface Asset { symbol: string; name: string; decimals: number; address: string | null; native: boolean }
export interface Pair {
  symbol: string; base: string; quote: string; tickSize: string; stepSize: string; minAmount: string;
  minNotional: string; makerFee: string; takerFee: string; lastPrice: string | null;
}
export interface Chain { chainId: string; name: string; custody: "ledger" | "vault" }
export interface OrderBook { symbol: string; bids: Level[]; asks: Level[]; sequence: number }
export interface Eip712 {
  domain: { name: string; version: string; chainId: number; verifyingContract: string };
  types: Record<string, { name: string; type: string }[]>;
  primaryTypes: Record<string, string>;
  maxLifetimeMs: number;
  minWithdrawalLifetimeMs?: number;
  maxWithdrawalLifetimeMs?: number;
}
/** An order placed, and the trades it made on arrival. */
export interface Placed { order: Order; trades: Trade[] }
/** One result of a batch: the order placed, or why that one was refused. */
export type BatchResult = Placed | { error: { code: string; message: string; field: string | null } };
/**
 * What ties an order of a batch signed once (contract version 4) to the batch's one signature:
 * the order's struct hash is `orderHashes[index]`, and `signature` recovers over `digest` to the
 * account or an agent it approved.
 */
export interface BatchProof {
  primaryType: "OrderBatch";
  encodedType: string;
  index: number;
  orderHashes: string[];
  account: string;
  nonce: string;
  expiry: number;
  digest: string;
  signature: string;
}
/** An order with what was signed for it (`GET /order/orderDetail`). */
export interface OrderDetail { order: Order; typedData: Record<string, unknown>; batch?: BatchProof }
