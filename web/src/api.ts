//! REST calls to the dexd that serves this page. Every error comes back as an `ApiError` with
//! the contract's code and message, so the page can show the server's own words. This module
//! knows nothing of the page's views.

// The contract's error as an exception: the TypeScript client's own (clients/typescript).
import { ApiError } from "../../clients/typescript/src/errors";

export { ApiError };

type Query = Record<string, string | number | undefined>;

async function answer<T>(response: Response): Promise<T> {
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.status, "UNREADABLE", `The server answered ${response.status} without JSON.`, null);
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: string; message?: string; field?: string | null } }).error ?? {};
    throw new ApiError(response.status, error.code ?? "ERROR", error.message ?? `HTTP ${response.status}`, error.field ?? null);
  }
  return body as T;
}

export async function get<T>(path: string, query: Query = {}): Promise<T> {
  const parameters = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined) parameters.set(name, String(value));
  }
  let response: Response;
  try {
    response = await fetch(`${path}?${parameters}`, { headers: { accept: "application/json" } });
  } catch {
    throw new ApiError(0, "UNREACHABLE", "The server cannot be reached.", null);
  }
  return answer<T>(response);
}

export async function post<T>(path: string, body: Record<string, unknown>): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "UNREACHABLE", "The server cannot be reached.", null);
  }
  return answer<T>(response);
}

// The contract's objects, as the page reads them.
export interface Level { price: string; amount: string; orders: number }
export interface Trade {
  tradeId: string; symbol: string; price: string; amount: string; cost: string;
  takerDirection: "buy" | "sell"; makerOrderId: string; takerOrderId: string; timestamp: number;
}
export interface AccountTrade extends Trade { orderId: string; role: "maker" | "taker"; fee: string; feeAsset: string }
export interface Order {
  orderId: string; clientOrderId: string | null; symbol: string; type: "limit" | "market";
  direction: "buy" | "sell"; timeInForce: string; postOnly: boolean; price: string | null; amount: string;
  filled: string; remaining: string; cost: string; average: string | null; fee: string; feeAsset: string;
  status: "open" | "filled" | "cancelled" | "untriggered"; timestamp: number; updatedAt: number;
  triggerPrice: string | null; triggerCondition: "above" | "below" | null; expiresAt: number | null;
}
export interface Balance { symbol: string; total: string; available: string; locked: string }
export interface Transfer {
  id: string; symbol: string; quantity: string; status: string; txHash: string | null; timestamp: number;
}
export interface Candle {
  openTime: number; open: string; high: string; low: string; close: string; volume: string;
  quoteVolume: string; trades: number;
}
export interface Asset { symbol: string; name: string; decimals: number; address: string | null; native: boolean }
export type Custody =
  | { mode: "ledger" }
  | { mode: "vault"; vault: string; operator: string; confirmations: number | "finalized"; crediting: string; haltReason: string | null };

/** When a vault chain credits a deposit, in words. */
export function creditedWhen(custody: { confirmations: number | "finalized" }): string {
  return custody.confirmations === "finalized"
    ? "once its block is finalized"
    : `after ${custody.confirmations} confirmations`;
}
export interface Pair {
  symbol: string; base: string; quote: string; tickSize: string; stepSize: string; minAmount: string;
  minNotional: string; makerFee: string; takerFee: string; lastPrice: string | null;
}
export interface Chain { chainId: string; name: string; custody: "ledger" | "vault" }
export interface Eip712 {
  domain: { name: string; version: string; chainId: number; verifyingContract: string };
  types: Record<string, { name: string; type: string }[]>;
  primaryTypes: {
    addOrder: string; cancelOrder: string; deposit: string; withdraw: string; cancelAll: string; amendOrder: string;
    cancelAllAfter: string; approveAgent: string; revokeAgent: string;
  };
  maxLifetimeMs: number;
  /** On a vault chain: how far ahead a withdrawal's expiry must be, and may be. */
  minWithdrawalLifetimeMs?: number;
  maxWithdrawalLifetimeMs?: number;
}
/** What the account's views of one chain and pair need. */
export interface Venue {
  chainId: string;
  pair: Pair;
  assets: Asset[];
  custody: Custody;
  eip712: Eip712;
}
export interface Agent { agent: string; name: string; validUntil: number | null; approvedAt: number }
export interface Tradable { symbol: string; buy: { maxAmount: string; maxCost: string }; sell: { maxAmount: string } }
export interface Reserve { symbol: string; onChain: string | null; liabilities: string; pendingWithdrawals: string; surplus: string | null }
export interface Position {
  netAmount: string; averageEntryPrice: string; markPrice: string | null; realizedPnl: string; unrealizedPnl: string;
}

/** An error in words for the page: the contract's message with its code ("… (NO_LIQUIDITY)"). */
export function describe(error: unknown): string {
  return error instanceof ApiError ? `${error.message} (${error.code})` : (error as Error).message;
}
